package server

import (
	"path/filepath"

	"sluice/exec/connector"
)

// The connectors' confinement (exec/connector.Policy): the file root,
// the ports listening sources may use, the hosts outgoing connections may
// reach, and the secrets options refer to. One policy serves the whole
// engine: CREATE checks against it (Validate) and every job's connectors
// are opened with it, so a restart with narrower flags confines the
// objects made before.

// DefaultFileRoot is where file connectors are confined without
// --file-root: a folder of the data directory.
func DefaultFileRoot(dataDir string) string { return filepath.Join(dataDir, "files") }

// setupPolicy installs the connectors' policy (Config.Policy, or the
// default for the data directory) with the engine's secrets.
func (e *Engine) setupPolicy() error {
	p := e.cfg.Policy
	if p == nil {
		var err error
		if p, err = connector.NewPolicy(DefaultFileRoot(e.cfg.DataDir), connector.DefaultSocketPorts, nil); err != nil {
			return err
		}
	}
	cp := *p
	cp.Secret = e.secretValue
	e.rt.Policy = &cp
	return nil
}

// policy returns the connectors' policy.
func (e *Engine) policy() *connector.Policy { return e.rt.Policy }

// connectorView returns cfg as a connector's Validate sees it: secret
// references resolved (only there: the catalog and the plan keep the
// references) and the policy attached.
func (e *Engine) connectorView(cfg connector.SinkConfig) (connector.SinkConfig, error) {
	opts, err := e.policy().ResolveOptions(cfg.Options)
	if err != nil {
		return cfg, err
	}
	cfg.Options, cfg.Policy = opts, e.policy()
	return cfg, nil
}
