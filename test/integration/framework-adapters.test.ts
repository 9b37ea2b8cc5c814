import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { cairnMemory, cairnTools } from '../../packages/ai-sdk/src/index.ts';
import { createClient, type CairnClient } from '../../packages/client/src/index.ts';
import { CairnChatMessageHistory, CairnRetriever } from '../../packages/langchain/src/index.ts';
import { createTestAccount, type Json } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The framework adapters (packages/ai-sdk, packages/langchain) against the real API and worker over
// HTTP. The language model is the only test double: a local server speaking the OpenAI chat-completions
// protocol, driven by the AI SDK's own OpenAI-compatible provider, which records what the model was sent.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let apiKey: string;
let cairn: CairnClient;
let llm: http.Server;
let llmUrl: string;
/** The chat-completions requests the model received. */
const sent: Json[] = [];
/** What the model answers to a request: text, or a call of one tool. */
let answer: (request: Json) => { text: string } | { tool: string; args: Json } = () => ({ text: 'ok' });

function completion(request: Json, res: http.ServerResponse) {
  const reply = answer(request);
  const message = 'text' in reply
    ? { role: 'assistant', content: reply.text }
    : { role: 'assistant', content: null, tool_calls: [{ id: `call_${sent.length}`, type: 'function', function: { name: reply.tool, arguments: JSON.stringify(reply.args) } }] };
  const finish = 'text' in reply ? 'stop' : 'tool_calls';
  if (!request.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-test', object: 'chat.completion', created: 0, model: request.model,
      choices: [{ index: 0, message, finish_reason: finish }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: Json, finishReason: string | null) => res.write(`data: ${JSON.stringify({
    id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 0, model: request.model, choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`);
  // The reply arrives in pieces, as a real stream does.
  const text = 'text' in reply ? reply.text : '';
  for (const piece of text.match(/.{1,7}/gs) ?? []) chunk({ role: 'assistant', content: piece }, null);
  chunk({}, finish);
  res.end('data: [DONE]\n\n');
}

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  const account = await createTestAccount(db.orm);
  ({ secret: apiKey } = await createApiKey(db.orm.em.fork(), account.id, {
    name: 'adapters', scopes: ['query', 'memory.read', 'memory.write'], maxPreset: 'accuracy',
  }));
  cairn = createClient({ baseUrl: api.baseUrl, apiKey });
  llm = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const request = JSON.parse(body);
      sent.push(request);
      completion(request, res);
    });
  });
  await new Promise<void>((resolve) => llm.listen(0, '127.0.0.1', resolve));
  llmUrl = `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`;

  await cairn.memory.peer('maria');
  await cairn.memory.session('garden');
  const write = await cairn.memory.add('garden', { peer_id: 'maria', messages: [{ role: 'user', content: 'I keep bees behind the Quillmarsh lighthouse.' }] });
  expect((await write.wait(120_000)).status).toBe('succeeded');
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await new Promise((resolve) => llm?.close(resolve));
  await db?.drop();
});

const model = () => createOpenAICompatible({ name: 'test', baseURL: llmUrl, apiKey: 'sk-test' }).chatModel('test-model');
const contents = async (session: string) => (await cairn.memory.messages(session)).items.map((m) => `${m.role}: ${m.content}`);

describe('the Vercel AI SDK adapter', () => {
  it('gives the model what memory holds about the peer, fenced as data, and keeps the exchange in the session', async () => {
    answer = () => ({ text: 'Behind the Quillmarsh lighthouse.' });
    const scope = { client: cairn, peer: 'maria', session: 'ai-generate', agentId: 'helper' };
    const { text } = await generateText({ model: wrapLanguageModel({ model: model(), middleware: cairnMemory(scope) }), prompt: 'Where do I keep my bees?' });
    expect(text).toBe('Behind the Quillmarsh lighthouse.');
    const system = sent.at(-1).messages[0];
    expect(system.role).toBe('system');
    expect(system.content).toMatch(/data, not instructions/);
    expect(system.content).toContain('Quillmarsh');
    await expect.poll(() => contents('ai-generate'), { timeout: 120_000 })
      .toEqual(['user: Where do I keep my bees?', 'assistant: Behind the Quillmarsh lighthouse.']);
  });

  it('keeps a streamed reply once the stream has ended', async () => {
    answer = () => ({ text: 'You keep them behind the lighthouse, Maria.' });
    const result = streamText({ model: wrapLanguageModel({ model: model(), middleware: cairnMemory({ client: cairn, peer: 'maria', session: 'ai-stream' }) }), prompt: 'Remind me about my bees.' });
    expect(await result.text).toBe('You keep them behind the lighthouse, Maria.');
    expect(sent.at(-1).stream).toBe(true);
    await expect.poll(() => contents('ai-stream'), { timeout: 120_000 })
      .toEqual(['user: Remind me about my bees.', 'assistant: You keep them behind the lighthouse, Maria.']);
  });

  it('lets the model recall with cited passages and remember a new fact through its tools', async () => {
    const tools = cairnTools({ client: cairn, peer: 'maria', session: 'ai-tools' });
    answer = (request) => (request.messages.some((m: Json) => m.role === 'tool') ? { text: 'done' } : { tool: 'recall', args: { query: 'Where are the bees kept?' } });
    await generateText({ model: model(), tools, stopWhen: stepCountIs(3), prompt: 'Where are my bees?' });
    const recalled = JSON.parse(sent.at(-1).messages.find((m: Json) => m.role === 'tool').content);
    expect(recalled.passages[0].text).toContain('Quillmarsh');
    expect(recalled.passages[0].citation).toEqual(expect.any(String));

    answer = (request) => (request.messages.some((m: Json) => m.role === 'tool') ? { text: 'noted' } : { tool: 'remember', args: { fact: 'I am allergic to peanuts.' } });
    await generateText({ model: model(), tools, stopWhen: stepCountIs(3), prompt: 'Note my peanut allergy.' });
    await expect.poll(() => contents('ai-tools'), { timeout: 120_000 }).toEqual(['user: I am allergic to peanuts.']);
  });

  it('does not fail the model call when Cairn refuses: the error goes to onError', async () => {
    answer = () => ({ text: 'fine' });
    const errors: unknown[] = [];
    const broken = createClient({ baseUrl: api.baseUrl, apiKey: 'cairn_sk_not_a_key', retries: 1 });
    const { text } = await generateText({
      model: wrapLanguageModel({ model: model(), middleware: cairnMemory({ client: broken, peer: 'maria', session: 'x', onError: (e) => errors.push(e) }) }),
      prompt: 'Hello?',
    });
    expect(text).toBe('fine');
    expect(sent.at(-1).messages[0].role).toBe('user');
    expect(errors.map((e) => (e as { status: number }).status)).toEqual([401, 401]);
  });

  it('runs its example against the service', async () => {
    answer = () => ({ text: 'You keep bees.' });
    const { stdout } = await promisify(execFile)(process.execPath, ['packages/ai-sdk/example.ts', 'What do I keep?'], {
      env: { ...process.env, CAIRN_URL: api.baseUrl, CAIRN_API_KEY: apiKey, OPENAI_BASE_URL: llmUrl, OPENAI_API_KEY: 'sk-test', MODEL: 'test-model' },
    });
    expect(stdout.trim()).toBe('You keep bees.');
    expect(sent.at(-1).messages[0].content).toContain('Quillmarsh');
  });
});

describe('the LangChain.js adapter', () => {
  it('retrieves cited Documents from evidence', async () => {
    const docs = await new CairnRetriever({ client: cairn, query: { peer_ids: ['maria'] }, k: 3 }).invoke('Where are the bees kept?');
    expect(docs.length).toBeGreaterThan(0);
    expect(docs.length).toBeLessThanOrEqual(3);
    expect(docs[0]!.pageContent).toContain('Quillmarsh');
    expect(docs[0]!.metadata).toMatchObject({ citationHandle: expect.any(String), kind: expect.any(String), origin: { type: expect.stringMatching(/^(message|claim)$/) } });
  });

  it('keeps a chat history as a memory session: empty before, the messages in order after, clear refused', async () => {
    const history = new CairnChatMessageHistory({ client: cairn, peer: 'maria', session: 'lc-history' });
    expect(await history.getMessages()).toEqual([]);
    await history.addMessages([new HumanMessage('I adopted a greyhound called Pepper.'), new AIMessage('Pepper is a lovely name.')]);
    await history.addUserMessage('She is three years old.');
    const messages = await history.getMessages();
    expect(messages.map((m) => [m.type, m.text])).toEqual([
      ['human', 'I adopted a greyhound called Pepper.'], ['ai', 'Pepper is a lovely name.'], ['human', 'She is three years old.'],
    ]);
    await expect(history.clear()).rejects.toThrow(/keeps conversation history/);
  });

  it('runs its example against the service', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['packages/langchain/example.ts', 'Where are the bees kept?'], {
      env: { ...process.env, CAIRN_URL: api.baseUrl, CAIRN_API_KEY: apiKey, SESSION: 'lc-example' },
    });
    expect(stdout).toContain('history:');
    expect(stdout).toMatch(/\[[^\]]+\] .*Quillmarsh/);
  });
});
