// The tools of memoryd (API.md §5): their specs as GET /v1/tools lists them,
// and their results. Names, execution modes, argument types and details
// types are generated from the specs (tools.generated.ts).
import type { CallContext } from "./types.js";
import type {
  GetContextRemainingDetails,
  HistoryListItemsDetails,
  HistorySearchContentsDetails,
  NotesListFilesByPrefixDetails,
  NotesWriteFileArgs,
  NotesWriteFileDetails,
  ToolName,
} from "./tools.generated.js";

export * from "./tools.generated.js";

export type ExecutionMode = "parallel" | "sequential";

/** One of the tools as GET /v1/tools lists it. */
export interface ToolSpec {
  name: ToolName;
  description: string;
  execution_mode: ExecutionMode;
  /** The tool's JSON Schema (draft 2020-12), the same the model is shown. */
  parameters: Record<string, unknown>;
  /** The JSON Schema of the details of the tool's result. */
  result: Record<string, unknown>;
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

// ---- tool details (API.md §5), by the names earlier versions gave them ----

export type HistoryItemSummary = HistoryListItemsDetails["results"][number];
export type HistorySearchRegion = HistorySearchContentsDetails["results"][number]["regions"][number];
export type NotesListFilesDetails = NotesListFilesByPrefixDetails;
export type NotesWriteDetails = NotesWriteFileDetails;
export type ContextRemainingDetails = GetContextRemainingDetails;
