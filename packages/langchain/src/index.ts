// Cairn for LangChain.js (@langchain/core 1): a retriever whose documents are Cairn's cited evidence
// (sources and native memory), and a chat message history kept as a session of Cairn's memory, so
// what a chain says is also remembered, derived into claims and searchable. Both go through @cairn/client.
import type { CairnClient, QueryOptions } from '@cairn/client';
import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import { Document } from '@langchain/core/documents';
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';

/**
 * Documents for a query from `POST /v1/query` in evidence mode (the key needs `query`): each evidence
 * item becomes a Document whose metadata keeps its citation handle, kind, score and origin, so a chain
 * can cite what it used. `query` narrows the search (peer_ids, session_ids, source_ids, preset...).
 */
export class CairnRetriever extends BaseRetriever {
  lc_namespace = ['cairn', 'retrievers'];
  private readonly client: CairnClient;
  private readonly options: QueryOptions;
  private readonly k: number;

  constructor(fields: BaseRetrieverInput & { client: CairnClient; query?: QueryOptions; k?: number }) {
    super(fields);
    this.client = fields.client;
    this.options = fields.query ?? {};
    this.k = fields.k ?? 8;
  }

  override async _getRelevantDocuments(query: string): Promise<Document[]> {
    const found = await this.client.query.evidence(query, this.options);
    return found.evidence.slice(0, this.k).map((e) => new Document({
      pageContent: e.text,
      id: e.citationHandle,
      metadata: { citationHandle: e.citationHandle, kind: e.kind, score: e.score, rank: e.rank, origin: e.origin },
    }));
  }
}

const ROLE = { human: 'user', ai: 'assistant', system: 'system' } as const;

/**
 * A chat history that is one session of Cairn's memory, spoken with one peer. Messages are written as
 * one memory write per call (waited for, so `getMessages()` right after returns them) and read back in
 * conversation order. Cairn keeps history: `clear()` is refused; start a new session id instead.
 */
export class CairnChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ['cairn', 'chat_history'];
  private readonly client: CairnClient;
  private readonly peer: string;
  private readonly session: string;
  private readonly workspace: string | undefined;
  private ready = false;

  constructor(fields: { client: CairnClient; peer: string; session: string; workspace?: string }) {
    super(fields);
    this.client = fields.client;
    this.peer = fields.peer;
    this.session = fields.session;
    this.workspace = fields.workspace;
  }

  async getMessages(): Promise<BaseMessage[]> {
    const out: BaseMessage[] = [];
    let cursor: string | undefined;
    do {
      let page;
      try {
        page = await this.client.memory.messages(this.session, { limit: 100, ...(cursor ? { cursor } : {}) }, this.workspace);
      } catch (err) {
        // A session not written yet is an empty history.
        if ((err as { status?: number }).status === 404 && out.length === 0) return [];
        throw err;
      }
      for (const m of page.items) {
        if (m.role === 'user') out.push(new HumanMessage(m.content));
        else if (m.role === 'assistant') out.push(new AIMessage(m.content));
        else if (m.role === 'system') out.push(new SystemMessage(m.content));
      }
      cursor = page.pagination.next_cursor ?? undefined;
    } while (cursor);
    return out;
  }

  async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message]);
  }

  /** All the messages in one memory write, waited for. */
  override async addMessages(messages: BaseMessage[]): Promise<void> {
    if (!messages.length) return;
    if (!this.ready) {
      await this.client.memory.peer(this.peer, this.workspace);
      await this.client.memory.session(this.session, this.workspace);
      this.ready = true;
    }
    const entries = messages.map((message) => {
      const role = ROLE[message.type as keyof typeof ROLE];
      if (!role) throw new Error(`Cairn stores human, ai and system messages; got ${message.type}.`);
      return { role, content: message.text };
    });
    const write = await this.client.memory.add(this.session, { peer_id: this.peer, messages: entries }, this.workspace);
    const event = await write.wait();
    if (event.status !== 'succeeded') throw new Error(`Cairn did not store the messages: the memory event ended ${event.status}.`);
  }

  override async clear(): Promise<void> {
    throw new Error('Cairn keeps conversation history; start a new session id (or delete the session through the API) instead of clearing it.');
  }
}
