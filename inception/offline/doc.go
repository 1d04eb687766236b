// Package offline scores inception modules on labelled turns: a library
// for rein detect --eval, --loao and --out-of-author and the tests; it
// consumes and produces no subjects.
//
// Exports:
//   - Evaluate (EvalConfig, EvalReport, TypeScore, GateScore, Latency,
//     Mistake): per-type precision, recall and F1, core-type (CoreTypes)
//     and mean recall, false activations on clean turns, the confusion
//     matrix, latency and, with EvalConfig.Gate, the cascade gate's pass
//     rates on erroneous and clean turns.
//   - LeaveOneAuthorOut and OutOfAuthor (AuthorScore, AuthorFigures,
//     AuthorGate): the learned classifiers trained without an author and
//     measured on that author's turns (inception.Example.Author).
package offline
