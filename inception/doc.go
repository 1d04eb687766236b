// Package inception is the runtime contract of rein's inception modules
// and their error taxonomy: a library, below the stages, that consumes and
// produces no subjects. The detector stage runs a Module on every user
// turn; rein detect and shadow mode run them over files and recorded
// turns; the injector derives its recovery tools from the taxonomy
// (ToolsByType).
//
// At every user turn an inception module sees the surface dialogue (oldest
// first, the last element being the user turn to judge), the agent's tool
// catalogue and the taxonomy, and returns a Decision: whether a known
// user-induced error is present (the taxonomy's types; the default ones
// are in default_taxonomy.yaml) and, when so, the recovery reasoning to
// plant as the agent's first think step.
//
// The modules live above it: inception/rules (the rules module, no
// model), inception/learned (the classifiers trained on the labelled
// corpus, and their trainers), inception/llmmodule (the LLM module and the
// cascade); inception/offline scores them on labelled turns. The labelled
// corpus they share is in testdata/corpus (its README has the figures).
//
// Exports:
//   - Taxonomy: versioned YAML (DefaultTaxonomy embeds the six default types;
//     LoadTaxonomy/ParseTaxonomy refuse an invalid file with the field and
//     line). Every Decision records Taxonomy.Version. Its contrasts (one
//     contrastive example per confusable pair) and judging rules (hard
//     cases) go into the model's prompt, those naming a hidden type left
//     out (PromptContrasts, PromptJudging).
//   - Module, Decision, Input (Input.LastUser: the turn to judge),
//     ContextFree and Instant (a module the stage runs without a
//     deadline): the runtime contract every module keeps; Live, a
//     module replaced between turns while it runs (a promoted model); the
//     module names (ModuleRules, ModuleLLM, ModuleCascade).
//   - Example (CleanClass, CorpusAuthor): a labelled turn, what training
//     and evaluation read.
//   - WordIndex: a whole-word search the taxonomy and the rules share;
//     FailReason: what a detection records of a module error.
//
// The checks on planted text every module shares are in
// inception/planted.
package inception
