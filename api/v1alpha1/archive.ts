/**
 * Archive: one transfer between a person and a volume through a pod the operator makes
 * (docs/decisions/0011-coursework.md, "Downloads" and "Uploads"): a download (`source`), served
 * once, or an upload (`target`), received once. The user-manager writes it for a signed-in person;
 * its spec names a student, an assignment or a course folder, never a claim: the operator derives
 * the claim, mounts it (read-only for a download, only the target folder for an upload) and reports
 * where the pod listens. Short-lived: deleted after the transfer (its pod goes with it).
 */
import { TEMPLATE_NAME_PATTERN } from "./template.ts";
import { USER_MAX, USER_PATTERN } from "./userland.ts";
import type { CustomObject } from "./group.ts";
import { Conditions, StringEnum, Type, type Static } from "./schema.ts";
import { UploadTargetSchema } from "./upload.ts";

export const ARCHIVES = "archives";

const TEMPLATE = Type.String({ pattern: TEMPLATE_NAME_PATTERN, maxLength: 24 });

export const ArchiveSpecSchema = Type.Object(
  {
    source: Type.Optional(
      Type.Object(
        {
          home: Type.Optional(
            Type.Object(
              {
                user: Type.String({ minLength: 1, maxLength: USER_MAX, pattern: USER_PATTERN }),
                templateName: TEMPLATE,
              },
              {
                description:
                  "A student's home volume (spec.coursework.home) of their Userland of the Template.",
              },
            ),
          ),
          handins: Type.Optional(
            Type.Object(
              {
                templateName: TEMPLATE,
                assignment: Type.String({ minLength: 1, maxLength: 253 }),
              },
              {
                description:
                  "Every hand-in of an assignment: the collection's handins/<assignment>/, one folder per student.",
              },
            ),
          ),
          classArchive: Type.Optional(
            Type.Object(
              {
                templateName: TEMPLATE,
                name: Type.String({ minLength: 1, maxLength: 253 }),
              },
              {
                description:
                  "A class's zip as its ClassArchive wrote and verified it (the collection's archives/<name>.zip), served as it is.",
              },
            ),
          ),
        },
        {
          description: "A download: what is archived, exactly one of home, handins and classArchive.",
          "x-kubernetes-validations": [
            {
              rule: "(has(self.home) ? 1 : 0) + (has(self.handins) ? 1 : 0) + (has(self.classArchive) ? 1 : 0) == 1",
              message: "name exactly one of source.home, source.handins and source.classArchive",
            },
          ],
        },
      ),
    ),
    target: Type.Optional(UploadTargetSchema),
    tokenSha256: Type.String({
      pattern: "^[0-9a-f]{64}$",
      description:
        "SHA-256 (hex) of the bearer token the one caller presents; the token itself is in no object.",
    }),
    requestedBy: Type.Optional(
      Type.String({
        maxLength: 512,
        description: "Who asked (the person's Kubernetes user), for the record.",
      }),
    ),
  },
  {
    "x-kubernetes-validations": [
      { rule: "self == oldSelf", message: "an Archive's spec is immutable" },
      {
        rule: "has(self.source) != has(self.target)",
        message: "name exactly one of source (a download) and target (an upload)",
      },
    ],
  },
);

export const ArchiveStatusSchema = Type.Object({
  phase: Type.Optional(
    StringEnum(["Pending", "Serving", "Served", "Failed"], {
      description:
        "Pending: the pod is being made or starting; Serving: it listens at podIP:port (a download's zip or an upload's files); Served or Failed: it ended.",
    }),
  ),
  pod: Type.Optional(Type.String({ maxLength: 253 })),
  podIP: Type.Optional(Type.String({ maxLength: 64 })),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  message: Type.Optional(Type.String({ maxLength: 4096 })),
  summary: Type.Optional(
    Type.Object({
      files: Type.Integer({ minimum: 0 }),
      bytes: Type.Integer({ minimum: 0, format: "int64" }),
      sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
      skipped: Type.Integer({ minimum: 0 }),
    }),
  ),
  conditions: Type.Optional(Conditions),
});

export type ArchiveSpec = Static<typeof ArchiveSpecSchema>;
export type ArchiveStatus = Static<typeof ArchiveStatusSchema>;
export type Archive = CustomObject<"Archive", ArchiveSpec, ArchiveStatus>;
