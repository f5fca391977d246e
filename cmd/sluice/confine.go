package main

import (
	"flag"
	"fmt"

	"sluice/exec/connector"
	"sluice/server"
)

// confineFlags are the flags that confine connectors and keep secrets.
type confineFlags struct {
	fileRoot, socketPorts, allowHosts, secretKeyFile *string
}

func registerConfineFlags() confineFlags {
	return confineFlags{
		fileRoot: flag.String("file-root", "", "directory file sinks and sources are confined to (default <data-dir>/files)"),
		socketPorts: flag.String("socket-ports", "10000-65535",
			"ports socket sources may listen on, lo-hi (never below 1024)"),
		allowHosts: flag.String("connector-allow-hosts", "",
			"comma-separated host or host:port list outgoing connector connections may reach (default: any)"),
		secretKeyFile: flag.String("secret-key-file", "", "AES-256 key sealing CREATE SECRET values (default <data-dir>/secret.key, made at first use)"),
	}
}

// apply sets cfg's connector policy and secret key from the flags.
func (f confineFlags) apply(cfg *server.Config) error {
	ports, err := connector.ParsePortRange(*f.socketPorts)
	if err != nil {
		return fmt.Errorf("--socket-ports %q: %w", *f.socketPorts, err)
	}
	hosts, err := connector.ParseAllowHosts(*f.allowHosts)
	if err != nil {
		return fmt.Errorf("--connector-allow-hosts: %w", err)
	}
	root := *f.fileRoot
	if root == "" {
		root = server.DefaultFileRoot(cfg.DataDir)
	}
	p, err := connector.NewPolicy(root, ports, hosts)
	if err != nil {
		return fmt.Errorf("--file-root %s: %w", root, err)
	}
	cfg.Policy, cfg.SecretKeyFile = p, *f.secretKeyFile
	return nil
}
