package plugin

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func writePlugin(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLookupPrefersTheLongestName(t *testing.T) {
	dir := t.TempDir()
	foo := writePlugin(t, dir, "jetctl-foo", 0o755)
	fooBar := writePlugin(t, dir, "jetctl-foo-bar", 0o755)
	dashed := writePlugin(t, dir, "jetctl-my_tool", 0o755)
	writePlugin(t, dir, "jetctl-noexec", 0o644)

	tests := []struct {
		args     []string
		wantPath string
		wantRest []string
		wantOK   bool
	}{
		{[]string{"foo", "bar", "x"}, fooBar, []string{"x"}, true},
		{[]string{"foo", "baz"}, foo, []string{"baz"}, true},
		{[]string{"foo", "--flag", "bar"}, foo, []string{"--flag", "bar"}, true},
		{[]string{"my-tool", "a"}, dashed, []string{"a"}, true},
		{[]string{"noexec"}, "", nil, false},
		{[]string{"nothing"}, "", nil, false},
		{[]string{"--flag"}, "", nil, false},
	}
	for _, tt := range tests {
		path, rest, ok := Lookup(dir, tt.args)
		if path != tt.wantPath || ok != tt.wantOK || !reflect.DeepEqual(rest, tt.wantRest) {
			t.Errorf("Lookup(%v) = %q, %v, %v; want %q, %v, %v", tt.args, path, rest, ok, tt.wantPath, tt.wantRest, tt.wantOK)
		}
	}
}

func TestListWarnings(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writePlugin(t, a, "jetctl-hello", 0o755)
	writePlugin(t, b, "jetctl-hello", 0o755)
	writePlugin(t, a, "jetctl-status", 0o755)
	writePlugin(t, b, "jetctl-off", 0o600)
	writePlugin(t, b, "not-a-plugin", 0o755)
	builtin := func(path []string) bool { return reflect.DeepEqual(path, []string{"status"}) }

	got := List(a+string(os.PathListSeparator)+b, builtin)
	want := []Plugin{
		{Name: "hello", Path: filepath.Join(a, "jetctl-hello"), Warnings: []string{}}, // [] in JSON, not null
		{Name: "status", Path: filepath.Join(a, "jetctl-status"), Warnings: []string{`named like built-in command "status", which wins: it never runs`}},
		{Name: "hello", Path: filepath.Join(b, "jetctl-hello"), Warnings: []string{"shadowed by " + filepath.Join(a, "jetctl-hello")}},
		{Name: "off", Path: filepath.Join(b, "jetctl-off"), Warnings: []string{"not executable"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestCommandName(t *testing.T) {
	for file, want := range map[string]string{
		"jetctl-foo":         "foo",
		"jetctl-foo-bar":     "foo bar",
		"jetctl-my_tool-sub": "my-tool sub",
	} {
		if got := commandName(file); got != want {
			t.Errorf("commandName(%q) = %q, want %q", file, got, want)
		}
	}
}
