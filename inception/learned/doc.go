// Package learned holds rein's trained classifiers and their trainers: a
// library that consumes and produces no subjects. Both are multinomial
// logistic regressions in one file format (GateModel), embedded and named
// by their content (Version, a decision's model_version):
//
//   - the gate's classifier (DefaultGateModel, gate_model.json), the
//     learned half of the cascade's gate: a turn the gate's rules hold
//     back still passes when it scores the model's threshold;
//   - the typed classifier (DefaultTypedModel, typed_model.json,
//     Features TypedFeatures), the precise rules' learned complement:
//     where the rules find nothing it activates with its likeliest type.
//
// TrainGate and TrainTyped fit them reproducibly on labelled turns
// (inception.Example) and choose their thresholds by cross-validation.
// The features come from a Featurizer (a TypedFeaturizer for the typed
// classifier), which the rules module supplies (rules.Module's
// GateFeaturizer and TypedFeaturizer), so this package knows no rule.
// rein detect --train-gate and --train-typed run them; go generate
// rebuilds the shipped files from the corpus's dev splits.
//
// Exports: GateModel (Validate, Version, Encode, Judge, Probabilities),
// GateTraining, GateModelFormat, TypedFeatures, ParseGateModel,
// DefaultGateModel, DefaultTypedModel, Feature, Verdict, Featurizer,
// TypedFeaturizer, TrainGate (GateTrainConfig), TrainTyped
// (TypedTrainConfig).
package learned
