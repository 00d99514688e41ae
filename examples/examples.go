// Package examples holds the plan files used by the README, docs/plan.md
// and `jetctl demo`. They are embedded so that `jetctl plan -f
// examples/orders.yaml` works from any directory.
package examples

import "embed"

// FS holds every example plan file, at its name (e.g. "orders.yaml").
//
//go:embed *.yaml
var FS embed.FS
