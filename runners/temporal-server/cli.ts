import { execFile, spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Later tags carry a `replace` directive that `go install` refuses; v1.5.1 builds cleanly. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export const TEMPORAL_CLI_HELP = `The Temporal CLI is needed to run a local Temporal server. Any one of these works:
  - install Go (https://go.dev/dl) and run: go install ${TEMPORAL_CLI_MODULE}
  - install the CLI another way (brew install temporal, or a release binary) and put it on PATH
  - set TEMPORAL_CLI to the path of a temporal binary
  - or point Cairn at an existing Temporal server with TEMPORAL_ADDRESS=host:port`;

export class TemporalCliMissingError extends Error {
  constructor(detail: string) {
    super(`${detail}\n${TEMPORAL_CLI_HELP}`);
    this.name = 'TemporalCliMissingError';
  }
}

export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function findOnPath(name: string, envPath = process.env.PATH ?? ''): Promise<string | undefined> {
  for (const dir of envPath.split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export async function goBinary(): Promise<string | undefined> {
  return (await findOnPath('go')) ?? ((await isExecutable('/usr/local/go/bin/go')) ? '/usr/local/go/bin/go' : undefined);
}

/** Where `go install` puts binaries: $GOBIN, else $(go env GOPATH)/bin, else ~/go/bin. */
export async function stableInstallDir(go?: string): Promise<string> {
  if (go) {
    try {
      const { stdout } = await execFileAsync(go, ['env', 'GOBIN', 'GOPATH']);
      const [gobin, gopath] = stdout.split('\n').map((s) => s.trim());
      if (gobin) return gobin;
      if (gopath) return path.join(gopath.split(path.delimiter)[0]!, 'bin');
    } catch {
      // fall through to the Go default
    }
  }
  return path.join(os.homedir(), 'go', 'bin');
}

export type ResolveOptions = {
  /** TEMPORAL_CLI, when set. */
  configured?: string | undefined;
  /** Build with `go install` when nothing is found (takes a few minutes once). */
  install?: boolean;
  log?: (message: string) => void;
};

/**
 * Finds a Temporal CLI binary. Order: TEMPORAL_CLI when set (an explicit choice wins), then PATH, then
 * the stable `go install` location, then `go install` itself. Never downloads a prebuilt binary.
 */
export async function resolveTemporalCli(options: ResolveOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  if (options.configured) {
    if (await isExecutable(options.configured)) return options.configured;
    throw new TemporalCliMissingError(`TEMPORAL_CLI=${options.configured} is not an executable file.`);
  }
  const onPath = await findOnPath('temporal');
  if (onPath) return onPath;

  const go = await goBinary();
  const stable = path.join(await stableInstallDir(go), 'temporal');
  if (await isExecutable(stable)) return stable;

  if (!go) throw new TemporalCliMissingError('No temporal binary was found and Go is not installed.');
  if (options.install === false) throw new TemporalCliMissingError('No temporal binary was found.');

  log(`Building the Temporal CLI once with "go install ${TEMPORAL_CLI_MODULE}" (a few minutes)...`);
  await goInstall(go, [TEMPORAL_CLI_MODULE]);
  if (await isExecutable(stable)) return stable;
  throw new TemporalCliMissingError(`go install finished but ${stable} is missing.`);
}

/** `go install` of packages (of one module at one version), into `gobin` when given; output goes to ours. */
export async function goInstall(go: string, packages: string[], gobin?: string): Promise<void> {
  const env = gobin ? { ...process.env, GOBIN: gobin } : process.env;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(go, ['install', ...packages], { env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new TemporalCliMissingError(`go install exited with code ${code}.`)),
    );
  });
}
