// Command jetctl is the command-line toolkit for NATS JetStream operations.
package main

import (
	"os"

	"github.com/jetctl/jetctl/cmd"
)

func main() { os.Exit(cmd.Main()) }
