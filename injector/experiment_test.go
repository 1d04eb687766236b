package injector_test

import (
	"testing"

	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/schemas"
)

// Control is judged but not treated: its task carries no thought.
func TestExperimentControlTaskCarriesNoThought(t *testing.T) {
	det := schemas.Detection{Turn: 2, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", Category: "ambiguous", Reasoning: "ask which"}
	for arm, planted := range map[string]bool{"": true, schemas.ArmTreatment: true, schemas.ArmControl: false} {
		det.Arm = arm
		if arm != "" {
			det.Experiment = "e1"
		}
		task := injector.TaskFor(det, "detection.acme.c.2", 2, nil)
		if (task.Inception != nil) != planted {
			t.Errorf("arm %q: inception %+v", arm, task.Inception)
		}
		if task.UserText != det.UserText || task.Turn != 2 {
			t.Errorf("arm %q: task %+v", arm, task)
		}
	}
}
