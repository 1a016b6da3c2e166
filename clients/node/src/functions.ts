// The Functions library on the server: which one the client calls (given,
// or discovered with FUNCTION LIST), loading it (FUNCTION LOAD without
// REPLACE, on every master), its contract (read once), and one call of one
// of its functions (FCALL / FCALL_RO) with the errors read. C++:
// src/redis/library.cpp and redis_client.cpp.
import type Redis from 'ioredis';

import { BackendError, InvalidRequestError, LayoutError } from './errors';
import { keysOf } from './codec';
import { Contract, LibraryInfo, parseContract, prefixOfName } from './library';
import { RedisClient, clusterReady, isReplyError, masters, untilClosed } from './topology';

/** What `describe()` answers: the library, and its matrix when its `info` names it. */
export interface LibraryDescription {
  library: string;
  prefix: string;
  matrixName?: string;
  matrixVersion?: string;
  fingerprint?: string;
  layout?: number;
  pathlockVersion?: string;
}

const notFound = (e: unknown): e is Error => isReplyError(e) && /^ERR Function not found/.test(e.message);

/** One connection's library, shared by the clients of a forNamespace() family. */
export class LibraryLink {
  private lib?: LibraryInfo;
  private resolving?: Promise<LibraryInfo>;
  private contractRead?: Promise<Contract>;

  constructor(
    private readonly redis: RedisClient,
    lib: LibraryInfo | undefined,
    private readonly fingerprint?: string,
  ) {
    this.lib = lib;
  }

  /** The library this client calls (discovering it first if needed). */
  async library(): Promise<LibraryInfo> {
    if (this.lib) return this.lib;
    if (!this.resolving) {
      this.resolving = this.discover().then(
        (lib) => (this.lib = lib),
        (e) => {
          this.resolving = undefined;
          throw e;
        },
      );
    }
    return this.resolving;
  }

  // Finds the loaded pathlock library: FUNCTION LIST LIBRARYNAME pathlock_v4_*;
  // several matrices' libraries may be loaded, so a fingerprint chooses among
  // them (read from each library's `info`).
  private async discover(): Promise<LibraryInfo> {
    await clusterReady(this.redis);
    const node = masters(this.redis)[0];
    let reply: unknown[];
    try {
      reply = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'pathlock_v4_*')) as unknown[];
    } catch (e) {
      throw new BackendError(`cannot list the server's functions: ${(e as Error).message}`, { cause: e });
    }
    const found: LibraryInfo[] = [];
    for (const entry of reply) {
      const fields = entry as unknown[];
      const name = String(fields[fields.indexOf('library_name') + 1]);
      if (!/^pathlock_v4_[0-9a-f]+$/.test(name)) continue;
      found.push({ name, prefix: prefixOfName(name) });
    }
    const want = this.fingerprint;
    const matching = [];
    for (const lib of found) {
      const fp = (await this.describe(lib).catch(() => undefined))?.fingerprint;
      if (!want || fp === want) matching.push(lib);
    }
    if (matching.length === 1) return matching[0];
    throw new InvalidRequestError(
      matching.length === 0
        ? `no pathlock library${want ? ` of matrix fingerprint ${want}` : ''} is loaded: pass its text (library/libraryFile)`
        : `${matching.length} pathlock libraries are loaded (several matrices): pass fingerprint, library or functionPrefix`,
    );
  }

  /** The library's `info` when it has one (undefined fields when it has none). */
  async describe(lib?: LibraryInfo): Promise<LibraryDescription> {
    const l = lib ?? (await this.library());
    try {
      const r = (await masters(this.redis)[0].call('FCALL_RO', l.prefix + 'info', 0)) as unknown[];
      if (Array.isArray(r) && r[0] === 'info')
        return {
          library: String(r[1]),
          prefix: l.prefix,
          matrixName: String(r[2]),
          matrixVersion: String(r[3]),
          fingerprint: String(r[4]),
          layout: Number(r[5]),
          pathlockVersion: String(r[6]),
        };
    } catch (e) {
      if (!isReplyError(e) || !/Function not found/i.test(e.message)) throw new BackendError(e instanceof Error ? e.message : String(e), { cause: e });
    }
    return { library: l.name, prefix: l.prefix };
  }

  /** The library's contract, read once (loading the library first where it is missing and its text is known). */
  contract(): Promise<Contract> {
    if (!this.contractRead) {
      this.contractRead = this.readContract();
      this.contractRead.catch(() => (this.contractRead = undefined));
    }
    return this.contractRead;
  }

  private async readContract(): Promise<Contract> {
    const lib = await this.library();
    const ask = async () => (await this.redis.call('FCALL_RO', lib.prefix + 'contract', '0')) as unknown[];
    let r: unknown[];
    try {
      try {
        r = await ask();
      } catch (e) {
        if (!notFound(e) || !lib.text || !(await this.missing(lib))) throw e;
        await this.load();
        r = await ask();
      }
    } catch (e) {
      if (e instanceof BackendError) throw e;
      if (notFound(e))
        throw new BackendError(
          (await this.missing(lib))
            ? `the library ${lib.name} is not loaded on the server and its text was not given`
            : `the library ${lib.name} has no function 'contract': it is older than protocol 4.2 (pathlock 1.0), which this ` +
                'client needs; load the library shipped with this package (libraryFile: defaultLibraryFile)',
          { cause: e },
        );
      throw new BackendError(`redis: contract: ${e instanceof Error ? e.message : e}`, { cause: e, mayHaveRun: false });
    }
    if (!Array.isArray(r) || r[0] !== 'contract') throw new BackendError(`redis: contract: unexpected reply ${JSON.stringify(r)}`);
    return parseContract(String(r[1]));
  }

  // Is no library of this name loaded (on the first master)?
  private async missing(lib: LibraryInfo): Promise<boolean> {
    const reply = (await masters(this.redis)[0].call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name)) as unknown[][];
    return !reply.some((f) => String(f[f.indexOf('library_name') + 1]) === lib.name);
  }

  /** Loads the library on every master (FUNCTION LOAD without REPLACE; "already exists" is success). */
  async load(): Promise<void> {
    const lib = await this.library();
    if (!lib.text) throw new BackendError(`the library ${lib.name} is not loaded on the server and its text was not given`);
    await clusterReady(this.redis);
    await Promise.all(
      masters(this.redis).map(async (node) => {
        try {
          await node.call('FUNCTION', 'LOAD', lib.text!);
        } catch (e) {
          if (isReplyError(e) && /already exists/.test(e.message)) return this.sameLibrary(node, lib);
          throw new BackendError(`FUNCTION LOAD of ${lib.name} failed: ${e instanceof Error ? e.message : e}`, { cause: e });
        }
      }),
    );
  }

  // A library of this name is loaded: it must be this text, else refused.
  private async sameLibrary(node: Redis, lib: LibraryInfo): Promise<void> {
    const reply = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name, 'WITHCODE')) as unknown[][];
    const entry = reply.find((f) => String(f[f.indexOf('library_name') + 1]) === lib.name);
    const code = entry ? String(entry[entry.indexOf('library_code') + 1]) : undefined;
    if (code !== undefined && code.trimEnd() !== lib.text!.trimEnd())
      throw new BackendError(`another library named ${lib.name} is loaded (its code differs from the one given); not replaced`);
  }

  /**
   * One call of function `name` on `namespace`'s keys. A call answered
   * `Function not found` never ran: the library is loaded and the call sent
   * again. Any other error is a BackendError; a reply that did not arrive
   * may hide a call that ran (mayHaveRun).
   */
  async fcall(namespace: string, name: string, args: string[], readOnly = false): Promise<unknown[]> {
    const lib = await this.library();
    const keys = keysOf(await this.contract(), namespace, name);
    const send = () =>
      untilClosed(this.redis, () => this.redis.call(readOnly ? 'FCALL_RO' : 'FCALL', lib.prefix + name, keys.length, ...keys, ...args));
    let reply: unknown;
    try {
      try {
        reply = await send();
      } catch (e) {
        if (!(notFound(e) && lib.text)) throw e;
        await this.load();
        reply = await send();
      }
    } catch (e) {
      if (e instanceof BackendError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      throw new BackendError(`redis: ${name}: ${message}`, { cause: e, mayHaveRun: !isReplyError(e) });
    }
    const r = reply as unknown[];
    if (!Array.isArray(r)) throw new BackendError(`redis: ${name}: unexpected reply ${JSON.stringify(reply)}`);
    if (r[0] === 'invalid') throw new InvalidRequestError(String(r[1]));
    if (r[0] === 'layout') throw new LayoutError(Number(r[1]), Number(r[2]));
    return r;
  }
}
