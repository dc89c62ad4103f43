// The agent's lifecycle state as memoryd last returned it: the one copy the
// extension keeps. Every lifecycle answer carries the new state; update()
// keeps it, refresh() asks for it (GET /v1/state).
import type { AgentState } from "@memoryd/client";

import type { Connection } from "./connection.js";

export class AgentStateCache {
  private value: AgentState | undefined;

  constructor(private readonly conn: Connection) {}

  get current(): AgentState | undefined {
    return this.value;
  }

  /** Keeps the state a lifecycle answer carried. */
  update(state: AgentState): AgentState {
    this.value = state;
    return state;
  }

  /** Reads the state from memoryd; undefined before the session is attached. */
  async refresh(): Promise<AgentState | undefined> {
    const ids = this.conn.ids;
    if (!ids) return undefined;
    return this.update(await this.conn.client.state(ids.taskId, ids.agent));
  }
}
