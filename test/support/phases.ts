/** A long test's phases, timed one after another and said at its end (`phases: a: 1.2 s; …; total …`). */
import type { TestContext } from "node:test";

/** Returns `phase(what)`: call it as each phase ends. */
export function phaseClock(t: TestContext): (what: string) => void {
  const began = Date.now();
  const phases: string[] = [];
  let last = began;
  t.after(() =>
    t.diagnostic(`phases: ${phases.join("; ")}; total ${((Date.now() - began) / 1000).toFixed(1)} s`),
  );
  return (what: string) => {
    const at = Date.now();
    phases.push(`${what}: ${((at - last) / 1000).toFixed(1)} s`);
    last = at;
  };
}
