// The runtime's entry: everything exported here is a Wasm export the host or the generated
// policy code calls.

import { gen_init } from "./gen";

export * from "./abi";
export * from "./codegen-api";
export * from "./builtins/index";

// Last, so that the runtime's own module state is initialised first: builds the policy's
// constants when the module is instantiated, below the heap pointer the host resets to.
gen_init();
