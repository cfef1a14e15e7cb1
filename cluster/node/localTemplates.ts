/**
 * deploy/'s example Templates, made to run on the real node: each public image (which no registry
 * here can serve) is swapped for the same application built locally from Debian and npm packages
 * (cluster/images/<recipe>), and the pods are scheduled on the real node with its StorageClass.
 * Nothing else changes, so the examples an admin applies on a real cluster are what runs here.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { Template } from "../../api/v1alpha1/index.ts";
import { repoRoot } from "../repoRoot.ts";
import { LOCAL_PATH_STORAGE_CLASS, onRealNode } from "./addons.ts";
import { buildImages, importImage, type BuiltImage } from "./images.ts";

/** Public image (without tag) → the recipe in cluster/images that builds the same application. */
const LOCAL_RECIPES: Record<string, string> = {
  "quay.io/jupyter/minimal-notebook": "jupyter",
  mariadb: "mariadb",
  phpmyadmin: "phpmyadmin",
  "codercom/code-server": "code-server",
};

const withoutTag = (image: string) => image.replace(/@sha256:.*$/, "").replace(/:[^/:]*$/, "");

/** The recipe that stands in for `image`, or undefined when none does. */
export function localRecipeFor(image: string): string | undefined {
  return LOCAL_RECIPES[withoutTag(image)];
}

export interface ContainerdTarget {
  ctr: string;
  socket: string;
}

/**
 * The Template in deploy/`file` with its images built and imported into the node's containerd and
 * swapped for them; fails naming any image that has no local recipe.
 */
export async function localTemplate(file: string, node: ContainerdTarget): Promise<Template> {
  const template = parse(readFileSync(join(repoRoot, "deploy", file), "utf8")) as Template;
  const podSpec = template.spec.template.spec;
  if (!podSpec) throw new Error(`deploy/${file}: the Template has no pod spec`);
  const containers = [...(podSpec.initContainers ?? []), ...podSpec.containers];
  const recipes = containers.map((c) => {
    const recipe = localRecipeFor(c.image ?? "");
    if (!recipe) throw new Error(`deploy/${file}: no local recipe builds ${c.image} (see LOCAL_RECIPES)`);
    return recipe;
  });
  const images: Record<string, BuiltImage> = await buildImages([...new Set(recipes)]);
  for (const [i, container] of containers.entries()) {
    const image = images[recipes[i] ?? ""];
    if (!image) throw new Error(`cluster/images/build.sh did not build ${recipes[i]}`);
    await importImage(node.ctr, node.socket, image);
    container.image = image.ref;
    container.imagePullPolicy = "Never";
  }
  Object.assign(podSpec, onRealNode);
  const coursework = template.spec.coursework;
  for (const volume of [
    ...(template.spec.volumes ?? []),
    ...(coursework?.folders ?? []),
    ...(coursework?.collection ? [coursework.collection] : []),
  ])
    volume.pvcSpec.storageClassName = LOCAL_PATH_STORAGE_CLASS;
  return template;
}
