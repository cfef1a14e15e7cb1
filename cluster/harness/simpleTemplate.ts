/** The smallest Template a run on kwok needs: one container on port 8080, no volumes. */
import type { TemplateSpec } from "../../api/v1alpha1/index.ts";

export function simpleTemplateSpec(
  image = "registry.invalid/ide:1",
  extra: Partial<TemplateSpec> = {},
): TemplateSpec {
  return {
    displayName: "Test IDE",
    template: {
      spec: { containers: [{ name: "ide", image, ports: [{ containerPort: 8080, name: "http" }] }] },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    ...extra,
  };
}
