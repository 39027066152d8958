// `npm run generate`: src/generated/openapi.ts from the service's current OpenAPI document.
import { writeFile } from "node:fs/promises";

import { GENERATED, openapiDocument, typesSource } from "./openapi-types.mjs";

await writeFile(GENERATED, await typesSource(await openapiDocument()));
console.log(`wrote ${GENERATED}`);
