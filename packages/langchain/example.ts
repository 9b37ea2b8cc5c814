// Run against `npm start`: CAIRN_URL, CAIRN_API_KEY (scopes query, memory.read, memory.write).
//   node packages/langchain/example.ts "Where are the bees kept?"
import { createClient } from '@cairn/client';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { CairnChatMessageHistory, CairnRetriever } from './src/index.ts';

const client = createClient({ baseUrl: process.env.CAIRN_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.CAIRN_API_KEY ?? '' });
const history = new CairnChatMessageHistory({ client, peer: process.env.PEER ?? 'maria', session: process.env.SESSION ?? 'langchain-example' });
await history.addMessages([new HumanMessage('I keep bees behind the Quillmarsh lighthouse.'), new AIMessage('Noted: bees, behind the lighthouse.')]);
console.log('history:', (await history.getMessages()).map((m) => `${m.type}: ${m.text}`));

const retriever = new CairnRetriever({ client, k: 3 });
for (const doc of await retriever.invoke(process.argv[2] ?? 'Where are the bees kept?')) console.log(`[${doc.metadata.citationHandle}] ${doc.pageContent}`);
