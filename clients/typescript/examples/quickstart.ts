import { MemreaderClient } from "memreader-client";

const memory = new MemreaderClient({ baseUrl: process.env.MEMREADER_URL, apiKey: process.env.MEMREADER_KEY, userId: "emily" });
await memory.add([{ role: "user", content: "I moved to Lisbon and started piano lessons." }], { session_id: "s1" });
const [hit] = await memory.search("where does Emily live?");
console.log(hit?.memory.memory, hit?.memory.item.metadata.sources[0]); // the memory, and the message it came from
