package lint

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the parts
// GitHub code scanning reads: the rules with their help, and each result
// with its rule, level, message and place. A silenced finding is a result
// with an in-source suppression that carries its reason.
//
// A place is a URI relative to the source root, SRCROOT: code scanning
// resolves a relative URI from the repository's root, whatever directory
// jetctl ran in, and refuses an absolute file: URI unless it can tell the
// checkout's path. So the source root is the repository's root when the
// plan files are in a git work tree, and the run says where it is
// (originalUriBaseIds); outside one it is the working directory.

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
	Tool sarifTool `json:"tool"`
	// OriginalURIBaseIDs says where SRCROOT is: the repository's root,
	// or the working directory outside a repository.
	OriginalURIBaseIDs map[string]sarifArtifact `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult            `json:"results"`
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
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
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

// srcRoot is the URI base id of the source root, as code scanning and
// the SARIF tools name it.
const srcRoot = "%SRCROOT%"

// SourceRoot is the directory SARIF artifact URIs are relative to.
type SourceRoot struct {
	// Dir is the source root, absolute: the root of the git work tree
	// the plan files are in, or WorkDir.
	Dir string
	// Repository is true when Dir is a git work tree's root.
	Repository bool
	// WorkDir is the working directory, absolute, against which relative
	// plan file paths are read.
	WorkDir string
}

// FindSourceRoot returns the source root of plan files read from workDir
// (absolute): the nearest git work tree (a directory holding .git, a
// directory or the file of a linked worktree or submodule) enclosing the
// first file that is in one; workDir when none is.
func FindSourceRoot(workDir string, files []string) (SourceRoot, error) {
	for _, f := range files {
		dir := filepath.Dir(absPath(workDir, f))
		for {
			_, err := os.Lstat(filepath.Join(dir, ".git"))
			if err == nil {
				return SourceRoot{Dir: dir, Repository: true, WorkDir: workDir}, nil
			}
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return SourceRoot{}, err
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return SourceRoot{Dir: workDir, WorkDir: workDir}, nil
}

func absPath(workDir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(workDir, path)
}

// artifact is a plan file's path as a SARIF artifact location: relative
// to the source root (with its base id) when it is inside it, with
// forward slashes; else an absolute file: URI.
func (root SourceRoot) artifact(path string) sarifArtifact {
	abs := absPath(root.WorkDir, path)
	rel, err := filepath.Rel(root.Dir, abs)
	if root.Dir == "" || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sarifArtifact{URI: fileURL(abs, false)}
	}
	return sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(rel)}).String(), URIBaseID: srcRoot}
}

// fileURL is an absolute path as a file: URI; a directory's ends in /.
func fileURL(abs string, dir bool) string {
	slashed := filepath.ToSlash(abs)
	if !strings.HasPrefix(slashed, "/") {
		slashed = "/" + slashed // C:/x on Windows
	}
	if dir && !strings.HasSuffix(slashed, "/") {
		slashed += "/"
	}
	return (&url.URL{Scheme: "file", Path: slashed}).String()
}

// SARIF renders the result, its places relative to root. version is
// jetctl's.
func SARIF(res *Result, version string, root SourceRoot) *SARIFLog {
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
	if root.Dir != "" {
		run.OriginalURIBaseIDs = map[string]sarifArtifact{srcRoot: {URI: fileURL(root.Dir, true)}}
	}
	add := func(f Finding, suppressed bool) {
		r := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevels[f.Severity], Message: sarifText{Text: f.Message}}
		var loc sarifLocation
		if f.Resource != "" {
			loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: f.Resource, Kind: "resource"}}
		}
		if f.Pos.File != "" {
			loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: root.artifact(f.Pos.File)}
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
