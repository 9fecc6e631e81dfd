// nika-os memory for OpenCode. Installed by `nika kernel spawn` into the tenant's
// OPENCODE_CONFIG_DIR/plugin/; replaced on every install (edit nika_tui/assets/opencode_plugin.js).
//
// Each hook runs `nika hook opencode EVENT` with a JSON payload on stdin, as Claude Code runs its
// hooks, and never breaks OpenCode: a failure, a timeout or an empty answer changes nothing.
//   chat.message                    -> UserPromptSubmit: capture the prompt; the answer's context
//                                      (session digest on a session's first prompt, the prompt's
//                                      own recall, the newest handoff packet) is added to the
//                                      user message as a synthetic text part.
//   experimental.session.compacting -> PreCompact: the handoff packet (a compaction that runs:
//                                      OpenCode's own, or the TUI's /compact: "manual"), with the
//                                      session's last ask, last answer and usage; nika reads the
//                                      rest of the session from OpenCode's database.
//   event session.idle              -> Stop: the reply, its token usage and the model's window,
//                                      and every answer's usage since the last idle (billing).
//   tool.execute.after              -> PostToolUse: one billed tool call (its name and call id).

const NIKA = __NIKA_COMMAND__
const TIMEOUT_MS = 15000

async function nikaHook(event, payload) {
  try {
    const proc = Bun.spawn([...NIKA, "hook", "opencode", event], {
      stdin: new Blob([JSON.stringify(payload)]),
      stdout: "pipe",
      stderr: "ignore",
      env: process.env,
    })
    const timer = setTimeout(() => proc.kill(), TIMEOUT_MS)
    const out = await new Response(proc.stdout).text()
    await proc.exited
    clearTimeout(timer)
    return out.trim() ? JSON.parse(out) : null
  } catch {
    return null
  }
}

export const NikaMemory = async ({ directory }) => {
  const windows = new Map() // sessionID -> the model's context limit (tokens)
  const texts = new Map() // messageID -> latest text of an assistant part
  const last = new Map() // sessionID -> { messageID, tokens, model } of the last finished answer
  const finished = new Map() // sessionID -> Map(messageID -> { id, tokens, model }) since the last idle
  const asks = new Map() // sessionID -> the person's last prompt
  const triggers = new Map() // sessionID -> "auto" | "manual", from the compaction's own part

  return {
    "chat.params": async (input) => {
      const limit = input?.model?.limit?.context
      if (input?.sessionID && limit) windows.set(input.sessionID, limit)
    },

    "chat.message": async (input, output) => {
      const parts = output?.parts ?? []
      const own = parts.filter((p) => p.type === "text" && !p.synthetic)
      const prompt = own.map((p) => p.text).join("\n")
      if (input?.sessionID && prompt) asks.set(input.sessionID, prompt)
      const answer = await nikaHook("UserPromptSubmit", {
        session_id: input.sessionID,
        cwd: directory,
        prompt,
      })
      const context = answer?.hookSpecificOutput?.additionalContext
      const anchor = own[own.length - 1]
      if (typeof context === "string" && context && anchor) {
        parts.push({
          id: anchor.id + "nika",
          messageID: anchor.messageID,
          sessionID: anchor.sessionID,
          type: "text",
          text: context,
          synthetic: true,
        })
      }
    },

    // Billing: every finished tool call, as Claude Code's PostToolUse. Awaited: a headless run
    // may exit right after its last tool, and a hook spawned then would be lost.
    "tool.execute.after": async (input) => {
      if (!input?.tool) return
      await nikaHook("PostToolUse", {
        session_id: input.sessionID,
        cwd: directory,
        tool_name: input.tool,
        call_id: input.callID,
      })
    },

    "experimental.session.compacting": async (input) => {
      const done = last.get(input.sessionID)
      const trigger = triggers.get(input.sessionID) ?? "auto"
      triggers.delete(input.sessionID)
      await nikaHook("PreCompact", {
        session_id: input.sessionID,
        cwd: directory,
        trigger,
        last_prompt: asks.get(input.sessionID),
        last_assistant_message: done ? texts.get(done.messageID) : undefined,
        tokens: done?.tokens,
        model: done?.model,
        context_window: windows.get(input.sessionID),
      })
    },

    event: async ({ event }) => {
      const props = event?.properties ?? {}
      if (event?.type === "message.part.updated") {
        const part = props.part
        if (part?.type === "text" && !part.synthetic) texts.set(part.messageID, part.text)
        // The compaction's request (written before it runs): `auto` false for a /compact.
        if (part?.type === "compaction") triggers.set(part.sessionID, part.auto === false ? "manual" : "auto")
      } else if (event?.type === "message.updated") {
        const info = props.info
        if (info?.role === "assistant" && info.time?.completed) {
          last.set(info.sessionID, { messageID: info.id, tokens: info.tokens, model: info.modelID })
          // Billing: every answer of the turn (a tool loop is several), once each by id.
          const answers = finished.get(info.sessionID) ?? new Map()
          answers.set(info.id, { id: info.id, tokens: info.tokens, model: info.modelID })
          finished.set(info.sessionID, answers)
        }
      } else if (event?.type === "session.idle") {
        const done = last.get(props.sessionID)
        const usage = [...(finished.get(props.sessionID)?.values() ?? [])]
        finished.delete(props.sessionID)
        await nikaHook("Stop", {
          session_id: props.sessionID,
          cwd: directory,
          last_assistant_message: done ? texts.get(done.messageID) : undefined,
          tokens: done?.tokens,
          model: done?.model,
          context_window: windows.get(props.sessionID),
          usage,
        })
      }
    },
  }
}
