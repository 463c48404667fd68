// Every native builtin, exported from the runtime as `bi_<name with dots as _>`
// (compiler/builtins.ts). Each file holds one family; add new files here.

export * from "./operators";
export * from "./membership";
export * from "./upsert";
export * from "./aggregates";
export * from "./numbers";
export * from "./strings";
export * from "./regex";
export * from "./case";
export * from "./trim";
export * from "./sprintf";
export * from "./objects";
export * from "./arrays";
export * from "./sets";
export * from "./types";
export * from "./encoding";
export * from "./urlquery";
export * from "./crypto";
export * from "./jwt";
export * from "./semver";
export * from "./units";
export * from "./uuid";
export * from "./bits";
export * from "./graph";
export * from "./json-patch";
export * from "./json-filter";
export * from "./walk";
export * from "./cidr";
export * from "./glob";
export * from "./glob-intersection";
export * from "./time-parse";
export * from "./time";
export * from "./time-format";
export * from "./time-parse-layout";
