// The tools of memoryd (API.md §5): their specs as GET /v1/tools lists them,
// results and details. Names, execution modes and argument types are
// generated from the specs (tools.generated.ts); the details, which the
// specs do not describe, are written here.
import type { CallContext } from "./types.js";
import type { NotesWriteFileArgs, ToolName } from "./tools.generated.js";

export * from "./tools.generated.js";

export type ExecutionMode = "parallel" | "sequential";

/** One of the tools as GET /v1/tools lists it. */
export interface ToolSpec {
  name: ToolName;
  description: string;
  execution_mode: ExecutionMode;
  /** The tool's JSON Schema (draft 2020-12), the same the model is shown. */
  parameters: Record<string, unknown>;
}

export interface TextContent {
  type: "text";
  text: string;
}

export interface ImageContent {
  type: "image";
  /** Base64 bytes. */
  data: string;
  mimeType: string;
}

export type ToolContent = TextContent | ImageContent;

/** The 200 answer of POST /v1/tools/{name}. */
export interface ToolResult<D = Record<string, unknown>> {
  content: ToolContent[];
  details: D;
  terminate: boolean;
}

export interface ToolCallRequest<A = Record<string, unknown>> {
  context: CallContext;
  arguments: A;
}

export type Role = "user" | "assistant" | "tool" | "system" | "developer";

/** The arguments of notes_append_to_file and notes_write_file (the same fields). */
export type NotesWriteArgs = NotesWriteFileArgs;

/** The arguments of a tool that takes none. */
export type NoArgs = Record<string, never>;

// ---- tool details (API.md §5) ---------------------------------------------

export interface HistoryListWindowsDetails {
  windows: { window_id: string; item_count: number; current: boolean }[];
  n_returned: number;
  omitted: number;
}

export interface HistoryItemSummary {
  item_id: string;
  window_id: string;
  role: Role;
  tool_namespace: string | null;
  tool_name: string | null;
  n_chars: number;
  images: number;
  truncated_content: string;
}

export interface HistoryListItemsDetails {
  results: HistoryItemSummary[];
  n_returned: number;
  omitted: number;
}

export interface HistoryReadItemDetails {
  agent: string;
  item_id: string;
  window_id: string;
  role: Role;
  content: string;
  offset_chars: number;
  end_chars: number;
  n_chars: number;
  next_offset_chars: number | null;
  images: number;
}

export interface HistorySearchRegion {
  offset_chars: number;
  limit_chars: number;
  preview: string;
  matches: { start: number; end: number }[];
}

export interface HistorySearchContentsDetails {
  results: {
    item_id: string;
    window_id: string;
    role: Role;
    tool_namespace: string | null;
    tool_name: string | null;
    n_chars: number;
    regions: HistorySearchRegion[];
  }[];
  n_returned: number;
  /** The first `limit` matches the output budget left out (the search stops after `limit` matches). */
  omitted: number;
  /** Present (true) when matches exist past `limit`. */
  more?: true;
}

export interface NotesListFilesDetails {
  files: { path: string; bytes: number; created_at: string; updated_at: string }[];
  n_returned: number;
  omitted: number;
}

export interface NotesReadFileDetails {
  path: string;
  text: string;
  start_line: number;
  stop_line: number;
  total_lines: number;
  offset_chars: number;
  end_chars: number;
  total_chars: number;
  next_offset_chars: number | null;
}

export interface NotesSearchContentsDetails {
  files: {
    path: string;
    created_at: string;
    matches: { line: number; text: string }[];
    omitted_matches: number;
  }[];
  n_returned: number;
  omitted: number;
}

export interface NotesWriteDetails {
  path: string;
  bytes: number;
  created: boolean;
  revision: number;
}

export interface ContextRemainingDetails {
  agent: string;
  window_id: string;
  remaining_tokens: number | null;
  hard_remaining_tokens: number | null;
  registered_agents: string[];
}

export interface NewContextDetails {
  pending: true;
  window_id: string;
}

/** The details of each tool's result, by name: callTool(name, ...) resolves to ToolResult<ToolDetails[name]>. */
export interface ToolDetails {
  history_list_windows: HistoryListWindowsDetails;
  history_list_items: HistoryListItemsDetails;
  history_read_item: HistoryReadItemDetails;
  history_search_contents: HistorySearchContentsDetails;
  notes_list_files_by_prefix: NotesListFilesDetails;
  notes_read_file: NotesReadFileDetails;
  notes_search_contents: NotesSearchContentsDetails;
  notes_append_to_file: NotesWriteDetails;
  notes_write_file: NotesWriteDetails;
  get_context_remaining: ContextRemainingDetails;
  new_context: NewContextDetails;
}
