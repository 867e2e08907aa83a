"""An example: VMs over SSH. Copy it, put your hosts in, then:

    pyinfra inventories/my_vms.py deploy/audit.py -y       # what is missing, changes nothing
    pyinfra inventories/my_vms.py deploy/provision.py -y   # install and start Triton

Host keys are checked against ~/.ssh/known_hosts, strictly: a host whose key is not there already
is refused (ssh_strict_host_key_checking = "yes" below; pyinfra's own default, "accept-new", trusts
whatever key a host shows the first time). Add each host's key once, after comparing its fingerprint
with the one its console or cloud provider shows: ssh-keyscan HOST >> ~/.ssh/known_hosts.
"""

gpu_vms = [
    (
        "gpu-1.example.org",
        {
            "ssh_user": "ubuntu",
            "ssh_key": "~/.ssh/id_ed25519",
            "ssh_strict_host_key_checking": "yes",
            "_sudo": True,  # provisioning writes /opt, /etc/profile.d and installs apt packages
            # behind a proxy (sudo drops the environment, so set it here):
            # "http_proxy": "http://proxy.corp:3128", "https_proxy": "http://proxy.corp:3128",
            # "no_proxy": "localhost,.corp",
            # torch_variant stays "auto": cuXYZ chosen from the driver; cpu where there is no GPU
        },
    ),
]

cpu_vms = [
    (
        "cpu-1.example.org",
        {"ssh_user": "ubuntu", "ssh_strict_host_key_checking": "yes", "_sudo": True, "triton_http_port": 8000},
    ),
]
