// JSON frames from an `omp --mode rpc` child's stdout, line by line, and a wait for the next
// one that matches: shared by the runtime tests that drive the runtime as an RPC client.

/// Frames from a child's stdout, line by line.
export class Frames {
  private buffer = "";
  private waiting: Array<{ match: (frame: any) => boolean; resolve: (frame: any) => void }> = [];
  readonly seen: any[] = [];

  feed(chunk: string) {
    this.buffer += chunk;
    let newline;
    while ((newline = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (!line.startsWith("{")) continue;
      let frame;
      try {
        frame = JSON.parse(line);
      } catch {
        continue;
      }
      this.seen.push(frame);
      for (const waiter of this.waiting.splice(0)) {
        if (waiter.match(frame)) waiter.resolve(frame);
        else this.waiting.push(waiter);
      }
    }
  }

  next(match: (frame: any) => boolean, what: string, ms = 60_000): Promise<any> {
    const found = this.seen.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} frame in ${ms} ms; saw: ${this.seen.map((f) => f.type).join(", ")}`)), ms);
      this.waiting.push({ match, resolve: (frame) => (clearTimeout(timer), resolve(frame)) });
    });
  }
}

