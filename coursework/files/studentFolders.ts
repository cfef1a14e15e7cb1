/**
 * Students' folders in the teacher's zips, both ways: a hand-ins zip names each student's folder by
 * the student (their identity, where it is a plain file name), and a feedback upload takes either
 * that name or the folder's name in the collection (`collectionUserFolder`, a slug plus a hash,
 * which a person does not recognise).
 */
import { collectionUserFolder } from "../../api/naming.ts";
import { pathProblem } from "./names.ts";
import type { UploadLayout } from "./upload.ts";

/** Feedback laid out by student: a top-level folder names a student by identity or collection folder. */
export function studentsLayout(users: readonly string[]): UploadLayout {
  const folders = new Map<string, string>();
  for (const user of users) {
    const folder = collectionUserFolder(user);
    folders.set(folder, folder);
    folders.set(user, folder);
  }
  return { kind: "students", folders };
}

/**
 * The name each student's collection folder gets in a zip (folder → name): the identity where it
 * is one safe, visible file name that no other student's name or folder equals (compared without
 * case, as a teacher's file system may), else the folder's own name.
 */
export function studentZipNames(users: readonly string[]): Map<string, string> {
  const plain = (user: string) =>
    !user.includes("/") && !user.startsWith(".") && pathProblem(user) === undefined && user.length <= 100;
  const students = [...new Set(users)].map((user) => ({ user, folder: collectionUserFolder(user) }));
  const taken = new Map<string, number>();
  const count = (name: string) => taken.set(name.toLowerCase(), (taken.get(name.toLowerCase()) ?? 0) + 1);
  for (const { user, folder } of students) {
    count(folder);
    if (plain(user) && user.toLowerCase() !== folder.toLowerCase()) count(user);
  }
  return new Map(
    students.map(({ user, folder }) => [
      folder,
      plain(user) && taken.get(user.toLowerCase()) === 1 ? user : folder,
    ]),
  );
}
