/**
 * The request bodies the API reads: JSON only (the roster route adds CSV, the console its forms),
 * so anything else is a clear 415, not an unvalidated string; and an empty JSON body is no body
 * (clients often send the header on POST .../start anyway): a route that needs one then fails
 * validation with a 400 naming it. A plugin without encapsulation, so the parsers are the app's.
 */
import type { FastifyPluginCallback } from "fastify";
import fastifyPlugin from "fastify-plugin";

const bodyParsers: FastifyPluginCallback = (app, _options, done) => {
  app.removeContentTypeParser("text/plain");
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, parsed) => {
    const text = body.toString();
    if (text.trim() === "") return parsed(null, undefined);
    void json(request, text, parsed);
  });
  done();
};

export const bodyParsersPlugin = fastifyPlugin(bodyParsers, { name: "userland-body-parsers" });
