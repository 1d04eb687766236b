package inception

// CleanClass is the class of a labelled turn without a known error, in
// evaluation reports and confusion matrices.
const CleanClass = "clean"

// Example is one labelled turn: the module's input and the gold answer.
type Example struct {
	ID        string
	Input     Input
	Rein      bool
	ErrorType string // "" when Rein is false
	// Author groups turns by who wrote them (CorpusAuthor), for
	// training and measuring out of author; "" when unknown.
	Author string
}

// Class is the example's gold class: its error type or CleanClass.
func (e Example) Class() string {
	if !e.Rein || e.ErrorType == "" {
		return CleanClass
	}
	return e.ErrorType
}

// CorpusAuthor returns the author of a corpus split, for grouping by
// author: dev and dev2 are one author's, and so is dev9 (the old test
// split, cut from the same 342 dialogues as dev); each other file is
// another's (testdata/corpus/README.md); any other name stands for itself.
func CorpusAuthor(split string) string {
	switch split {
	case "dev", "dev2", "dev9":
		return "A"
	case "dev3":
		return "B"
	case "dev4":
		return "C"
	case "dev5":
		return "D"
	case "dev6":
		return "E"
	case "dev7":
		return "F"
	case "dev8":
		return "G"
	}
	return split
}
