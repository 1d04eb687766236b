package inception

import (
	"errors"
	"testing"
)

func TestWithHeldOutCopiesAndHoldsOut(t *testing.T) {
	base := DefaultTaxonomy()
	tax, err := base.WithHeldOut(TypeContradiction)
	if err != nil {
		t.Fatal(err)
	}
	if et, _ := tax.Type(TypeContradiction); !et.HeldOut {
		t.Error("contradiction is not held out in the copy")
	}
	if et, _ := base.Type(TypeContradiction); et.HeldOut {
		t.Error("the original taxonomy was changed")
	}
	if n := len(tax.PromptTypes()); n != len(base.PromptTypes())-1 {
		t.Errorf("%d prompt types, want %d", n, len(base.PromptTypes())-1)
	}
	if _, err := base.WithHeldOut("nope"); !errors.Is(err, ErrInvalidTaxonomy) {
		t.Errorf("unknown type: %v", err)
	}
	all := []string{}
	for _, et := range base.ErrorTypes {
		all = append(all, et.Name)
	}
	if _, err := base.WithHeldOut(all...); !errors.Is(err, ErrInvalidTaxonomy) {
		t.Errorf("every type held out: %v", err)
	}
}
