/**
 * An upload's target: what an Archive with `spec.target` receives into (docs/decisions/0011-
 * coursework.md, "Uploads"). Like a download's source it names a Template's folder or an
 * assignment's feedback, never a claim: the operator derives the claim and mounts only that folder
 * read-write in the upload pod.
 */
import { Type } from "./schema.ts";
import { COURSE_FOLDER_NAME_PATTERN, TEMPLATE_NAME_PATTERN } from "./template.ts";
import { USER_MAX, USER_PATTERN } from "./userland.ts";

const TEMPLATE = Type.String({ pattern: TEMPLATE_NAME_PATTERN, maxLength: 24 });

export const UploadTargetSchema = Type.Object(
  {
    materials: Type.Optional(
      Type.Object(
        {
          templateName: TEMPLATE,
          folder: Type.String({
            pattern: COURSE_FOLDER_NAME_PATTERN,
            maxLength: 40,
            description: "A course folder of the Template (spec.coursework.folders[].name).",
          }),
          path: Type.Unsafe<string>({
            type: "string",
            minLength: 1,
            maxLength: 1024,
            pattern: "^[^/]",
            description:
              'The folder inside it the files go to, e.g. week1/lab (made when missing); "." for the course folder\'s root.',
            "x-kubernetes-validations": [
              {
                rule: "!self.matches('(^|/)[.][.](/|$)')",
                message: "a path must not contain '..' components",
              },
              { rule: "!self.contains('\\\\')", message: "a path must not contain a backslash" },
            ],
          }),
        },
        { description: "Files into a folder of a course folder (an assignment's materials)." },
      ),
    ),
    feedback: Type.Optional(
      Type.Object(
        {
          templateName: TEMPLATE,
          assignment: Type.String({ minLength: 1, maxLength: 253 }),
          user: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: USER_MAX,
              pattern: USER_PATTERN,
              description:
                "One student: the files go to their feedback folder. Unset: the upload's top-level folders name the students.",
            }),
          ),
        },
        {
          description:
            "Feedback into the collection's feedback/<assignment>/<student folder>/, returned with the assignment's next feedbackRelease.",
        },
      ),
    ),
  },
  {
    description: "Where an upload goes: exactly one of materials and feedback.",
    "x-kubernetes-validations": [
      {
        rule: "has(self.materials) != has(self.feedback)",
        message: "name exactly one of target.materials and target.feedback",
      },
    ],
  },
);
