// The committed src/generated/openapi.ts is what `npm run generate` makes of the service's
// OpenAPI document now: a route or a body field changed in Python without regenerating the
// types fails here.
import { readFile } from "node:fs/promises";

import { expect, it } from "vitest";

import { GENERATED, openapiDocument, typesSource } from "../scripts/openapi-types.mjs";

it("the generated types match the service's current OpenAPI document", async () => {
  const fresh = await typesSource(await openapiDocument());
  const committed = await readFile(GENERATED, "utf8");
  // One message naming the fix, not a diff of 1,500 lines.
  expect(committed === fresh, "src/generated/openapi.ts is stale: run `npm run generate`").toBe(true);
}, 120_000);
