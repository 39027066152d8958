import { type LanguageModel, generateText, isStepCount } from "ai";
import { MemreaderClient } from "memreader-client";
import { memreaderTools } from "memreader-client/ai";

const client = new MemreaderClient({ baseUrl: process.env.MEMREADER_URL, apiKey: process.env.MEMREADER_KEY });

/** One turn of a chat with memory: the model may remember what the user says and recall what
 * they said before; the tools only ever touch `userId`'s memories, in session `chatId`. */
export async function reply(model: LanguageModel, userId: string, chatId: string, message: string): Promise<string> {
  const tools = memreaderTools(client, { userId, sessionId: chatId });
  const { text } = await generateText({ model, tools, prompt: message, stopWhen: isStepCount(3) });
  return text;
}
