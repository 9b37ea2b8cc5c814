import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { temporalBinaryPaths, temporalUiCommand } from '../../runners/cluster/temporal.ts';
import { isExecutable } from '../../runners/temporal-server/cli.ts';
import { freePort } from '../helpers/ephemeral.ts';

// The cluster's Temporal UI (npm run cluster) listens on loopback only: it has no sign-in, and it
// listened on every interface. Runs where the cluster's binaries are built (npm run cluster builds
// them once into ~/.cache/cairn).

const binaries = temporalBinaryPaths();
const built = await isExecutable(binaries.ui);
// A non-loopback IPv4 address of this machine, to knock on.
const outside = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
let ui: ChildProcess | undefined;
afterAll(() => {
  ui?.kill('SIGKILL');
});

const connects = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host, port }, () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });

describe.skipIf(!built || !outside)('the cluster\'s Temporal UI', () => {
  it('listens on 127.0.0.1 and not on the machine\'s other addresses', { timeout: 120_000 }, async () => {
    const port = await freePort();
    const cmd = await temporalUiCommand(binaries, { temporalAddress: '127.0.0.1:1', port });
    ui = spawn(cmd.command, cmd.args, { env: { ...process.env, ...cmd.env }, stdio: 'ignore' });
    await expect.poll(() => connects('127.0.0.1', port), { timeout: 90_000, interval: 100 }).toBe(true);
    expect(await connects(outside!, port)).toBe(false);
  });
});
