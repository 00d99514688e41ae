package lint

// ReportVersion is the version of the JSON report (-o json); a change
// that removes or renames a field raises it.
const ReportVersion = 1

// Report is `jetctl lint -o json`'s document (docs/lint.md describes it).
type Report struct {
	Version int `json:"version"`
	// Checked is "files", "server", or "files+server" (-f with --live).
	Checked string `json:"checked"`
	// Files are the plan files read (none with --live alone).
	Files  []string       `json:"files"`
	FailOn string         `json:"fail_on"`
	Counts map[string]int `json:"counts"`
	// Failed is true when a finding is at or above FailOn: the command
	// exits 8.
	Failed bool `json:"failed"`
	*Result
}

// NewReport wraps a result. failOn 0 means no severity fails.
func NewReport(res *Result, checked string, files []string, failOn Severity) *Report {
	if files == nil {
		files = []string{}
	}
	r := &Report{Version: ReportVersion, Checked: checked, Files: files, FailOn: "none", Result: res,
		Counts: map[string]int{"error": 0, "warning": 0, "info": 0, "suppressed": len(res.Suppressed)}}
	for _, f := range res.Findings {
		r.Counts[f.Severity.String()]++
	}
	if failOn != 0 {
		r.FailOn = failOn.String()
		r.Failed = res.Count(failOn) > 0
	}
	return r
}
