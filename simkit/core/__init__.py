"""The JIT: types, arrays, structs, the frontend, codegen, compilation and launch."""
