// Package examples holds the plan files used by the README, docs/plan.md
// and `jetctl demo`. They are embedded so that `jetctl plan -f
// examples/orders.yaml` (or `-f examples/`) works from any directory.
//
// Each directory is one consistent set of plan files, planned as a
// directory the way a CI job plans plans/: examples/ is the ORDERS
// pipeline, examples/migrate/ the change that migrates its FULFILMENT
// stream (it declares FULFILMENT again, so it cannot share a directory
// with orders.yaml).
package examples

import "embed"

// FS holds every example plan file, at its name (e.g. "orders.yaml",
// "migrate/fulfilment-audit.yaml").
//
//go:embed *.yaml migrate/*.yaml
var FS embed.FS
