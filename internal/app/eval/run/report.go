package run

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/reinception/rein/internal/app/eval"
)

// BuildReport computes a run directory's report from its results.jsonl,
// with run.json's note.
func BuildReport(dir string) (*eval.RunReport, error) {
	m, err := ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s: not a run directory of rein eval run", ErrRunDir, dir, ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	results, err := ReadResults(dir)
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: %s has no finished plays yet", ErrRunDir, dir)
	}
	r, err := eval.Report(results, eval.ReportOptions{Note: m.Note})
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is the run finished? rerun rein eval run with the same flags to complete it)", dir, err)
	}
	return r, nil
}

// WriteRunReport builds a run directory's report and writes report.json,
// report.md and the charts into it.
func WriteRunReport(dir string) (*eval.RunReport, error) {
	r, err := BuildReport(dir)
	if err != nil {
		return nil, err
	}
	return r, eval.WriteReport(dir, r)
}
