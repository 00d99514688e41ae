// Package plugin finds and runs jetctl plugins: executables named
// jetctl-NAME on PATH, run as `jetctl NAME`. The lookup follows kubectl's
// rules: built-in commands win, and `jetctl foo bar` tries jetctl-foo-bar
// before jetctl-foo.
package plugin

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Prefix starts every plugin's file name.
const Prefix = "jetctl-"

// Plugin is an executable found on PATH.
type Plugin struct {
	// Name is the command the plugin adds, with spaces: "foo bar" for
	// jetctl-foo-bar.
	Name string `json:"name"`
	Path string `json:"path"`
	// Warnings is [] when there are none.
	Warnings []string `json:"warnings"`
}

// IsBuiltin reports whether a command path (e.g. ["stream", "tail"]) names
// a built-in command.
type IsBuiltin func(path []string) bool

// Lookup finds the plugin for args: the longest run of leading non-flag
// arguments that names an executable jetctl-… file in pathEnv. It returns
// the plugin's path and the arguments that follow its name.
func Lookup(pathEnv string, args []string) (string, []string, bool) {
	var pieces []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		pieces = append(pieces, strings.ReplaceAll(a, "-", "_"))
	}
	for n := len(pieces); n > 0; n-- {
		name := Prefix + strings.Join(pieces[:n], "-")
		if path, ok := findExecutable(pathEnv, name); ok {
			return path, args[n:], true
		}
	}
	return "", nil, false
}

func findExecutable(pathEnv, name string) (string, bool) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err == nil && isExecutable(info) {
			return path, true
		}
	}
	return "", false
}

func isExecutable(info os.FileInfo) bool {
	return !info.IsDir() && info.Mode().Perm()&0o111 != 0
}

// List returns every jetctl-… file in pathEnv, in PATH order, with warnings
// for those that cannot run as intended: shadowed by an earlier PATH entry,
// not executable, or named like a built-in command.
func List(pathEnv string, builtin IsBuiltin) []Plugin {
	var plugins []Plugin
	first := make(map[string]string)
	seenDir := make(map[string]bool)
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || seenDir[dir] {
			continue
		}
		seenDir[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), Prefix) || e.IsDir() {
				continue
			}
			p := Plugin{Name: commandName(e.Name()), Path: filepath.Join(dir, e.Name()), Warnings: []string{}}
			info, err := os.Stat(p.Path)
			if err != nil {
				continue
			}
			if !isExecutable(info) {
				p.Warnings = append(p.Warnings, "not executable")
			}
			if builtin(strings.Fields(p.Name)) {
				p.Warnings = append(p.Warnings, "named like built-in command \""+p.Name+"\", which wins: it never runs")
			}
			if earlier, ok := first[e.Name()]; ok {
				p.Warnings = append(p.Warnings, "shadowed by "+earlier)
			} else if isExecutable(info) {
				first[e.Name()] = p.Path
			}
			plugins = append(plugins, p)
		}
	}
	return plugins
}

// commandName turns jetctl-foo-bar_baz into "foo bar-baz".
func commandName(file string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(file, Prefix), ".exe")
	parts := strings.Split(name, "-")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "_", "-")
	}
	return strings.Join(parts, " ")
}
