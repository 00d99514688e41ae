// Package completions holds jetctl's generated shell completion scripts.
// Regenerate them after changing commands or flags with:
//
//	go generate ./completions
//
// TestFresh fails when a checked-in script differs from what jetctl
// generates.
package completions

//go:generate go run ./gen
