// Drives an AG-UI agent with the published client (@ag-ui/client's HttpAgent), as a front end does.
//
//   node drive.mjs PLAN_JSON
//
// PLAN: {"url": ..., "threadId": ..., "headers": {...}, "messages": [...], "steps": [STEP, ...]}
// ("messages": what the front end already holds); each STEP is one run:
//   {"say": "text"}                          add a user message, run
//   {"edit": {"index": n, "text": "..."}}    change the n-th user message, drop what followed it, run
//   {"resume": [{"status": "resolved", "payload": {...}}, ...]}
//                                            answer the pending interrupts (in order), run
//   {"thread": "id"}                         (with any of the above) use this thread id from now on
// Prints one JSON line per step: {"events": [...], "messages": [...], "result": ..., "error": ...,
// "pendingInterrupts": [...]}. The client itself checks the event order (it throws on a bad stream).
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const plan = JSON.parse(process.argv[2]);
const agent = new HttpAgent({
  url: plan.url,
  threadId: plan.threadId,
  headers: plan.headers ?? {},
  initialMessages: plan.messages ?? [],
});

for (const step of plan.steps) {
  if (step.thread) agent.threadId = step.thread;
  const events = [];
  const parameters = { runId: step.runId ?? randomUUID() };
  if (step.say !== undefined) {
    agent.addMessage({ id: randomUUID(), role: "user", content: step.say });
  }
  if (step.edit !== undefined) {
    const messages = agent.messages;
    const users = messages.map((m, i) => [m, i]).filter(([m]) => m.role === "user");
    const [, at] = users[step.edit.index];
    const kept = messages.slice(0, at + 1);
    kept[at] = { ...kept[at], content: step.edit.text };
    agent.setMessages(kept);
  }
  if (step.resume !== undefined) {
    parameters.resume = agent.pendingInterrupts.map((interrupt, i) => ({
      interruptId: interrupt.id,
      ...step.resume[Math.min(i, step.resume.length - 1)],
    }));
  }
  let outcome = { error: null, result: null };
  try {
    const ran = await agent.runAgent(parameters, { onEvent: ({ event }) => { events.push(event); } });
    outcome.result = ran.result ?? null;
  } catch (error) {
    outcome.error = String(error && error.message ? error.message : error);
  }
  process.stdout.write(
    JSON.stringify({
      runId: parameters.runId,
      events,
      messages: agent.messages,
      pendingInterrupts: agent.pendingInterrupts,
      ...outcome,
    }) + "\n",
  );
}
