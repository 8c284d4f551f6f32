// Built into dist/, which `gui-agent serve` serves at /react/ (backends/react_front.py).
// Paths are relative ("./"), so the page works under any root path the server is given.
export default {
  base: "./",
  esbuild: { jsx: "automatic" },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
};
