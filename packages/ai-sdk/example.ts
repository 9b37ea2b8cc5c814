// Run against `npm start`: CAIRN_URL, CAIRN_API_KEY (scopes query, memory.read, memory.write), and an
// OpenAI-compatible model: OPENAI_BASE_URL, OPENAI_API_KEY, MODEL.
//   node packages/ai-sdk/example.ts "Where do I keep my bees?"
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createClient } from '@cairn/client';
import { generateText, stepCountIs, wrapLanguageModel } from 'ai';
import { cairnMemory, cairnTools } from './src/index.ts';

const env = (name: string) => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
const client = createClient({ baseUrl: process.env.CAIRN_URL ?? 'http://127.0.0.1:8080', apiKey: env('CAIRN_API_KEY') });
const provider = createOpenAICompatible({ name: 'llm', baseURL: env('OPENAI_BASE_URL'), apiKey: process.env.OPENAI_API_KEY });
const scope = { client, peer: process.env.PEER ?? 'maria', session: process.env.SESSION ?? 'ai-sdk-example', agentId: 'example-agent' };

const { text } = await generateText({
  // The middleware adds what memory holds for this turn and keeps the exchange afterwards...
  model: wrapLanguageModel({ model: provider.chatModel(env('MODEL')), middleware: cairnMemory(scope) }),
  // ...and the tools let the model store and search on its own.
  tools: cairnTools(scope),
  stopWhen: stepCountIs(4),
  prompt: process.argv[2] ?? 'What do you remember about me?',
});
console.log(text);
