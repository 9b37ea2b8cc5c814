import type { Benchmark } from '../lib/benchmark.ts';
import { auth } from './auth.ts';
import { cluster } from './cluster.ts';
import { ingest } from './ingest.ts';
import { injection } from './injection.ts';
import { isolation, isolationHeavy } from './isolation.ts';
import { memory } from './memory.ts';
import { mcp } from './mcp.ts';
import { metering } from './metering.ts';
import { mixed } from './mixed.ts';
import { ocr } from './ocr.ts';
import { query } from './query.ts';
import { recall } from './recall.ts';
import { scale } from './scale.ts';

/** Every benchmark, in the order `npm run bench` runs them and docs/benchmarks.md lists them. */
export const benchmarks: Benchmark[] = [auth, metering, ingest, memory, query, recall, mcp, mixed, injection, isolation, isolationHeavy, ocr, cluster, scale];
