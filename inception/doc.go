// Package inception holds rein's inception modules and their error
// taxonomy: a library, below the stages, that consumes and produces no
// subjects. The detector stage runs a module on every user turn; rein
// detect and shadow mode run them over files and recorded turns; the
// injector derives its recovery tools from the taxonomy (ToolsByType).
//
// At every user turn an inception module sees the surface dialogue (oldest
// first, the last element being the user turn to judge), the agent's tool
// catalogue and the taxonomy, and returns a Decision: whether a known
// user-induced error is present (the taxonomy's types; the default ones
// are in default_taxonomy.yaml) and, when so, the recovery reasoning to
// plant as the agent's first think step.
//
// Exports:
//   - Taxonomy: versioned YAML (DefaultTaxonomy embeds the six default types;
//     LoadTaxonomy/ParseTaxonomy refuse an invalid file with the field and
//     line). Every Decision records Taxonomy.Version. Its contrasts (one
//     contrastive example per confusable pair) and judging rules (hard
//     cases) go into the model's prompt, those naming a hidden type left
//     out (PromptContrasts, PromptJudging).
//   - Module, Decision, Input (Input.LastUser: the turn to judge) and
//     ContextFree: the runtime contract every module keeps; Live, a
//     module replaced between turns while it runs (a promoted model); the modules
//     that call a model (the LLM module, the cascade) are in
//     inception/llmmodule.
//   - NewRules: the rules module, which judges offline from the candidate
//     entities in the dialogue, the tool catalogue's names, descriptions and
//     JSON Schemas, conflict and alternative markers and the taxonomy's
//     domain notes, and, given RulesConfig.Products (LoadProductCatalogue
//     reads a τ-bench products.json), the store's product options;
//     RulesPrecise, or RulesRecall, the cascade's gate, which
//     loosens each precise check. The rules implement ContextFree: the
//     precise rules need the agent's replies only when a check reading
//     the agent's words could fire, the gate never.
//   - Evaluate (EvalConfig, Example, EvalReport): scores a module on
//     labelled turns — per-type precision, recall and F1, core-type and mean
//     recall, false activations on clean turns, the confusion matrix,
//     latency and, with EvalConfig.Gate, the cascade gate's pass rates on
//     erroneous and clean turns. rein detect --eval runs it on the labelled
//     corpus in testdata/corpus (its README has the figures).
//   - GateModel (gate_model.go): an optional learned half of the cascade's
//     gate, a logistic regression over the user turn's words and the rules'
//     structural signals (RulesConfig.GateModel; DefaultGateModel is the one
//     trained on the corpus's dev splits, gate_model.json). TrainGate
//     (gate_train.go) fits it reproducibly and picks its threshold by
//     cross-validation; rein detect --train-gate runs it, go generate
//     rebuilds the shipped file.
//   - Typed classifier (typed_model.go, typed_features.go): an optional
//     learned complement of the precise rules, a 7-class logistic
//     regression over the rules' intermediate signals and the user turn's
//     words (RulesConfig.TypedModel; DefaultTypedModel, typed_model.json).
//     Where the rules find nothing it activates with its likeliest type
//     above a threshold TrainTyped picks by author-fold cross-validation
//     for a clean false-activation budget; LeaveOneAuthorOut and
//     OutOfAuthor measure it on authors it never saw (rein detect
//     --train-typed, --loao, --out-of-author).
//   - Planted-text checks every module shares: RenderPlan/SanitizeEvidence
//     (the planted reasoning is the taxonomy's recovery plan with a
//     sanitised evidence quote as its only slot), GroundEvidence (the
//     quote must be the user's own words), GeneratedCheck (a generated
//     plan names its tool and no other, claims no authority, states no
//     amount the dialogue lacks), NamesTool, ClaimsAuthority, CleanText,
//     ContainsWord, SanitizeUncapped; FailReason: what a detection
//     records of a module error.
package inception
