// CoreDNS with just the plugins the real node's Corefile uses (cluster/node/addons.ts), plus log and
// loop for looking into it: CoreDNS's own main imports every plugin (github.com/coredns/coredns/
// core/plugin), the cloud providers' SDKs of route53, azure and clouddns among them, which made it
// one of the slowest of the cluster's builds. A plugin the Corefile names but this build leaves out
// fails CoreDNS's start with "Unknown directive", so a missing one shows at once.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
