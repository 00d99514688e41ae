package lint

import (
	"net/url"
	"path/filepath"
	"strings"
)

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the parts
// GitHub code scanning reads: the rules with their help, and each result
// with its rule, level, message and place. A silenced finding is a result
// with an in-source suppression that carries its reason.

// SARIFSchema is the schema the document names.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

// SARIFLog is a SARIF document.
type SARIFLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []SARIFRun `json:"runs"`
}

// SARIFRun is the one run of a SARIF document.
type SARIFRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	HelpURI              string         `json:"helpUri"`
	DefaultConfiguration sarifLevel     `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifLevel struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifText          `json:"message"`
	Locations    []sarifLocation    `json:"locations"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

// sarifLevels are SARIF's names of the severities.
var sarifLevels = map[Severity]string{Error: "error", Warning: "warning", Info: "note"}

// SARIF renders the result. version is jetctl's.
func SARIF(res *Result, version string) *SARIFLog {
	driver := sarifDriver{Name: "jetctl", Version: version, InformationURI: "https://github.com/jetctl/jetctl"}
	index := map[string]int{}
	for i := range rules {
		r := &rules[i]
		index[r.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   r.ID,
			Name:                 ruleName(r.ID),
			ShortDescription:     sarifText{Text: r.Summary},
			FullDescription:      sarifText{Text: r.Why},
			Help:                 sarifText{Text: r.Why + "\n\nFix: " + r.Fix, Markdown: r.Why + "\n\n**Fix:** " + r.Fix + "\n\n[docs/lint.md](" + r.HelpURI() + ")"},
			HelpURI:              r.HelpURI(),
			DefaultConfiguration: sarifLevel{Level: sarifLevels[r.Severity]},
			Properties:           map[string]any{"tags": []string{"jetstream", "configuration"}},
		})
	}
	run := SARIFRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	add := func(f Finding, suppressed bool) {
		r := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevels[f.Severity], Message: sarifText{Text: f.Message}}
		var loc sarifLocation
		if f.Resource != "" {
			loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: f.Resource, Kind: "resource"}}
		}
		if f.Pos.File != "" {
			loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(f.Pos.File)}}
			if f.Pos.Line > 0 { // none for a file that could not be read
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Pos.Line, StartColumn: f.Pos.Column}
			}
		}
		r.Locations = []sarifLocation{loc}
		if suppressed {
			r.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: f.Reason}}
		}
		run.Results = append(run.Results, r)
	}
	for _, f := range res.Findings {
		add(f, false)
	}
	for _, f := range res.Suppressed {
		add(f, true)
	}
	return &SARIFLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []SARIFRun{run}}
}

// ruleName is the rule id in the PascalCase SARIF viewers show:
// max-deliver-unlimited is MaxDeliverUnlimited.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// fileURI is a plan file's path as a SARIF artifact URI: relative paths
// stay relative (to the checkout, as code scanning expects), with forward
// slashes; absolute ones become file: URIs.
func fileURI(path string) string {
	slashed := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		return (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	slashed = strings.TrimPrefix(slashed, "./")
	return (&url.URL{Path: slashed}).String()
}
