/**
 * Opening folders and files without ever following a symbolic link, in any component of a path.
 *
 * Node has no openat(2), and O_NOFOLLOW guards only a path's last component: a student who swaps a
 * parent folder for a link between two of our calls would lead `open("home/a/b.txt")` anywhere. So
 * every lookup here starts from a folder we already hold open, through `/proc/self/fd/<fd>/<name>`:
 * the kernel resolves that from the open folder itself (the magic link jumps to the very folder, not
 * to its name), and O_NOFOLLOW then applies to `<name>`: the same as openat(fd, name, O_NOFOLLOW).
 * Whatever a student renames or replaces meanwhile, a lookup never leaves the folder it started in.
 * Linux only, which is where the copying pods run.
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, type FileHandle } from "node:fs/promises";
import { resolve } from "node:path";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** Flags to open a folder: never through a link. */
const FOLDER_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/**
 * Flags to open a file for reading: never through a link; O_NONBLOCK so that a FIFO swapped in after
 * the walk saw a regular file cannot block the open (the fstat that follows refuses it); O_NOCTTY so a
 * terminal never becomes ours.
 */
export const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;

/** What a student reads when the copier may not read one of their files or folders. */
export const NO_PERMISSION = "could not be read (no permission: let others read it, e.g. chmod -R a+rX)";

/** A path inside a component refused for being a link or not a folder. */
export class UnsafePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafePathError";
  }
}

/** The path that names `name` inside the open folder `dir` (see the file's comment). */
export function inside(dir: FileHandle, name: string): string {
  return `/proc/self/fd/${dir.fd}/${name}`;
}

/** Why `name` in `dir` is no folder we may enter, for an error message. */
async function whyNotFolder(dir: FileHandle, name: string): Promise<string> {
  const stats = await lstat(inside(dir, name)).catch(() => undefined);
  if (!stats) return "does not exist";
  if (stats.isSymbolicLink()) return "is a symbolic link (never followed)";
  if (!stats.isDirectory()) return "is not a folder";
  return "cannot be opened";
}

/** Opens the folder `name` inside `dir`; with `create`, makes it first when it is missing. */
export async function openFolderIn(
  dir: FileHandle,
  name: string,
  shown: string,
  create = false,
): Promise<FileHandle> {
  try {
    return await open(inside(dir, name), FOLDER_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (create && code === "ENOENT") {
      // mkdir never follows a link in its last component: a link planted meanwhile fails with EEXIST.
      await mkdir(inside(dir, name), 0o755).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw e;
      });
      return openFolderIn(dir, name, shown, false);
    }
    if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") {
      throw new UnsafePathError(`${JSON.stringify(shown)} ${await whyNotFolder(dir, name)}`);
    }
    if (code === "EACCES") throw new UnsafePathError(`${JSON.stringify(shown)} ${NO_PERMISSION}`);
    throw error;
  }
}

/**
 * Opens the folder at `path` (absolute, or relative to the working directory) through every one of its
 * components without following a link; `create` makes missing folders (mode 0755).
 */
export async function openFolder(path: string, create = false): Promise<FileHandle> {
  const names = resolve(path)
    .split("/")
    .filter((s) => s !== "");
  return descend(await open("/", FOLDER_FLAGS), names, create, (i) => `/${names.slice(0, i + 1).join("/")}`);
}

/**
 * Opens the folder at `relative` (segments separated by `/`, already checked by names.ts) beneath the
 * open folder `root`; an empty path opens `root` again. The caller closes the result.
 */
export async function openFolderBeneath(
  root: FileHandle,
  relative: string,
  create = false,
): Promise<FileHandle> {
  const names = relative.split("/").filter((s) => s !== "");
  const start = await open(`/proc/self/fd/${root.fd}`, FOLDER_FLAGS & ~O_NOFOLLOW);
  return descend(start, names, create, (i) => names.slice(0, i + 1).join("/"));
}

/**
 * Opens `names` one below the other from the open folder `start`, closing each folder it leaves
 * (and `start`); `shown(i)` is the path up to names[i] as errors name it.
 */
async function descend(
  start: FileHandle,
  names: string[],
  create: boolean,
  shown: (i: number) => string,
): Promise<FileHandle> {
  let current = start;
  for (const [i, name] of names.entries()) {
    try {
      const next = await openFolderIn(current, name, shown(i), create);
      await current.close();
      current = next;
    } catch (error) {
      await current.close();
      throw error;
    }
  }
  return current;
}

/** `a/b/c.txt` → ["a/b", "c.txt"]; `c.txt` → ["", "c.txt"]. */
export function splitPath(path: string): [folder: string, name: string] {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? ["", path] : [path.slice(0, slash), path.slice(slash + 1)];
}
