// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {
  get_weather(args: GetWeatherInput): Promise<GetWeatherOutput>;
};

declare const input: unknown;

interface GetWeatherInput {
  city: string;
  units?: "metric" | "imperial";
}

interface GetWeatherOutput {
  summary: string;
  temp: number;
}

interface PtcSchemaViolation {
  path: string;
  keyword: string;
  message: string;
}

interface ToolArgumentError {
  name: "ToolArgumentError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

interface ToolError {
  name: "ToolError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

interface ToolCallLimitError {
  name: "ToolCallLimitError";
  tool: string;
  code: string;
  message: string;
}

type PtcToolError = ToolArgumentError | ToolError | ToolCallLimitError;

declare const console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
};
