package injector

import (
	"github.com/reinception/rein/schemas"
)

// Inception returns the block to plant for a detection: the recovery
// reasoning as the thought of a think call, with the error type and its
// recovery tool; nil when the detection says no, failed, or carries no
// reasoning (nothing is planted then, so the turn runs as without rein),
// and for a conversation in an experiment's control arm, whose decision is
// recorded but not acted on. tools maps error types to recovery tools for detections that name none.
func Inception(det schemas.Detection, tools map[string]string) *schemas.Inception {
	if !det.Rein || det.Failed || det.Reasoning == "" || det.ErrorType == "" || det.Arm == schemas.ArmControl {
		return nil
	}
	tool := det.RecoveryTool
	if tool == "" {
		tool = tools[det.ErrorType]
	}
	if tool == "" {
		switch det.Category {
		case schemas.CategoryUnsupported:
			tool = schemas.ToolTransfer
		default:
			tool = schemas.ToolAmbiguityReport
		}
	}
	return &schemas.Inception{Thought: det.Reasoning, ErrorType: det.ErrorType, RecoveryTool: tool}
}

// TaskFor builds the task of one user turn from its detection.
func TaskFor(det schemas.Detection, detectionID string, turn int, tools map[string]string) schemas.Task {
	return schemas.Task{Turn: taskTurn(det, turn), UserText: det.UserText, DetectionID: detectionID, Inception: Inception(det, tools)}
}

// taskTurn is the user turn a detection's task is for: the detection's own
// turn, else the turn of its event (meta).
func taskTurn(det schemas.Detection, metaTurn int) int {
	if det.Turn != 0 {
		return det.Turn
	}
	return metaTurn
}
