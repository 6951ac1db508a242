"""Secret shapes for the redaction corpus (tests/notify/test_secrets.py): how each appears in a command.

Each shape is (name, text, secret): `text` holds the secret once, where an agent would type it;
`secret` is what must never reach a page, not even 6 characters of it. `PATH_SAFE` names the
shapes recognisable on their own (no flag or name beside them), which are also placed in paths.
All values are made up.
"""

from __future__ import annotations

AWS_KEY_ID = "AKIAZ7QW3RT5YU9OP1LM"
AWS_SECRET = "q8Rz/Wv3Tn+Yb6Lc0Xd2Fh4Jk7Mp9Qs1Gu5Ae8Zc"
PEM_BODY = "MIIEowIBAAKCAQEAv7Qx9Lm2Np4Rs6Tu8Wy0Za1Bc3De5Fg7Hi9Jk2Lm4No6Pq8Rs0Tu"
GITHUB = "ghp_Zq8Wx3Cv5Bn7Mk9Lj2Hg4Fd6Sa1Po0IuYtRe"

SHAPES: list[tuple[str, str, str]] = [
    ("aws-key-id", f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}", AWS_KEY_ID),
    ("aws-key-id-bare", f"aws sts get-caller-identity # key {AWS_KEY_ID}", AWS_KEY_ID),
    ("aws-sts-key-id", "echo ASIAQ4WX7RT2YU8OP3LN > creds", "ASIAQ4WX7RT2YU8OP3LN"),
    ("aws-secret-configure", f"aws configure set aws_secret_access_key {AWS_SECRET}", AWS_SECRET),
    ("aws-secret-env", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 ls", AWS_SECRET),
    ("aws-secret-ini", f"printf '[default]\\naws_secret_access_key = {AWS_SECRET}\\n' > ~/.aws/c", AWS_SECRET),
    (
        "gcp-service-account",
        '{"type": "service_account", "private_key_id": "4f1c9e2ab7d3", "private_key": '
        f'"-----BEGIN PRIVATE KEY-----\\n{PEM_BODY}\\n-----END PRIVATE KEY-----\\n"}}',
        PEM_BODY,
    ),
    (
        "azure-storage-connection",
        "az storage blob list --connection-string 'DefaultEndpointsProtocol=https;AccountName=acme;"
        "AccountKey=Xy7Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc2Vb4Nm6Qw==;EndpointSuffix=core.windows.net'",
        "Xy7Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc2Vb4Nm6Qw==",
    ),
    (
        "azure-servicebus-connection",
        "export SB='Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=Mn3Bv5Cx7Zl9Kj2Hg4Fd6Sa8Po0Iu1Yt3Re5Wq7Er9='",
        "Mn3Bv5Cx7Zl9Kj2Hg4Fd6Sa8Po0Iu1Yt3Re5Wq7Er9=",
    ),
    (
        "azure-sas",
        "curl 'https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sig=Qm9vYmFyYmF6cXV4K2Zvbw%3D'",
        "Qm9vYmFyYmF6cXV4K2Zvbw%3D",
    ),
    ("github-ghp", f"git push https://{GITHUB}@git.acme.dev/acme/app.git", GITHUB),
    (
        "github-gho",
        "gh api user --header 'X: gho_Pl9Ok8Ij7Uh6Yg5Tf4Rd3Es2Wa1Qz0Xc9Vb'",
        "gho_Pl9Ok8Ij7Uh6Yg5Tf4Rd3Es2Wa1Qz0Xc9Vb",
    ),
    (
        "github-ghs",
        "echo ghs_Mn8Bv7Cx6Zl5Kj4Hg3Fd2Sa1Po0Iu9Yt8Re | gh auth login --with-token",
        "ghs_Mn8Bv7Cx6Zl5Kj4Hg3Fd2Sa1Po0Iu9Yt8Re",
    ),
    (
        "github-fine-grained",
        "GH_TOKEN=github_pat_11ABCDE2F0qWeRtYuIoP_aSdFgHjKlZxCvBnMqWeRtYuIoPaSdFgHjKlZxCvBnM12 gh pr list",
        "github_pat_11ABCDE2F0qWeRtYuIoP_aSdFgHjKlZxCvBnMqWeRtYuIoPaSdFgHjKlZxCvBnM12",
    ),
    (
        "gitlab-pat",
        "curl -H 'PRIVATE-TOKEN: glpat-Rt5Yu7Io9Pa2Sd4Fg6Hj' https://gitlab.example/api",
        "glpat-Rt5Yu7Io9Pa2Sd4Fg6Hj",
    ),
    ("gitlab-pat-bare", "git remote add origin x # glpat-Zx1Cv3Bn5Mq7We9Rt2Yu", "glpat-Zx1Cv3Bn5Mq7We9Rt2Yu"),
    (
        "bitbucket-app-password",
        "export BB=ATBB3qW5eR7tY9uI2oP4aS6dF8gH0jK1lZ3xC5vB7nM9Q2w4E6r8T0",
        "ATBB3qW5eR7tY9uI2oP4aS6dF8gH0jK1lZ3xC5vB7nM9Q2w4E6r8T0",
    ),
    ("bitbucket-url", "git clone https://x-token-auth:Kq2Wd4Rf6Tg8Yh@bitbucket.org/acme/app.git", "Kq2Wd4Rf6Tg8Yh"),
    ("npm-token", "npm publish # npm_Ab3Cd5Ef7Gh9Ij2Kl4Mn6Op8Qr0St1Uv3Wx5", "npm_Ab3Cd5Ef7Gh9Ij2Kl4Mn6Op8Qr0St1Uv3Wx5"),
    (
        "npmrc-authtoken",
        "echo '//registry.npmjs.org/:_authToken=Zk4Lm6Np8Qr0St2Uv4Wx6Yz8' >> .npmrc",
        "Zk4Lm6Np8Qr0St2Uv4Wx6Yz8",
    ),
    ("npm-config-set", "npm config set //npm.acme.dev/:_authToken Qw9Er7Ty5Ui3Op1As", "Qw9Er7Ty5Ui3Op1As"),
    (
        "pypi-token",
        "twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJDQ1Zjc4YmE5LWQ3Nzgt dist/*",
        "pypi-AgEIcHlwaS5vcmcCJDQ1Zjc4YmE5LWQ3Nzgt",
    ),
    ("dockerhub-pat", "docker login -u me --password dckr_pat_Xq7Wz3Rk9Lm2Np4Bv6Cx8", "dckr_pat_Xq7Wz3Rk9Lm2Np4Bv6Cx8"),
    ("docker-login-p", "docker login -u me -p Tr0ub4dorAndThree registry.acme.dev", "Tr0ub4dorAndThree"),
    ("docker-stdin", "echo 'Pl4inPassw0rdHere' | docker login -u me --password-stdin", "Pl4inPassw0rdHere"),
    ("slack-bot", "export SLACK=xoxb-2048-4096-Qz8Wx6Ec4Rv2Tb0Yn", "xoxb-2048-4096-Qz8Wx6Ec4Rv2Tb0Yn"),
    ("slack-user", "curl -d token=xoxp-1234-5678-Aq1Sw2De3Fr4 slack.com/api", "xoxp-1234-5678-Aq1Sw2De3Fr4"),
    ("stripe-live", "stripe charges list --api-key sk_live_51Hq8Wz3Rk9Lm2Np4Bv6Cx8", "sk_live_51Hq8Wz3Rk9Lm2Np4Bv6Cx8"),
    ("openai", "OPENAI_API_KEY=sk-Aq2Sw4De6Fr8Gt0Hy1Ju3Ki5Lo7 python run.py", "sk-Aq2Sw4De6Fr8Gt0Hy1Ju3Ki5Lo7"),
    ("openai-proj", "python call.py sk-proj-Zx9Cv7Bn5Mq3We1Rt8Yu6Io4Pa2", "sk-proj-Zx9Cv7Bn5Mq3We1Rt8Yu6Io4Pa2"),
    (
        "anthropic",
        "claude --key sk-ant-api03-Mn4Bv6Cx8Zl0Kj2Hg4Fd6Sa8Po-Iu1Yt3AA",
        "sk-ant-api03-Mn4Bv6Cx8Zl0Kj2Hg4Fd6Sa8Po-Iu1Yt3AA",
    ),
    (
        "huggingface",
        "huggingface-cli login --token hf_Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9Pz0X",
        "hf_Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9Pz0X",
    ),
    ("huggingface-bare", "python dl.py hf_Lp0Ok9Ij8Uh7Yg6Tf5Rd4Es3Wa2Qz1X", "hf_Lp0Ok9Ij8Uh7Yg6Tf5Rd4Es3Wa2Qz1X"),
    (
        "twilio-auth-token",
        "TWILIO_AUTH_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0 node sms.js",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ),
    (
        "twilio-api-key",
        "twilio api:core:messages:list # SK1a2b3c4d5e6f708192f3e4d5c6b7a809",
        "SK1a2b3c4d5e6f708192f3e4d5c6b7a809",
    ),
    (
        "sendgrid",
        "export SG_KEY=SG.Qw3Er5Ty7Ui9Op1As3Df5G.Hj7Kl9Zx1Cv3Bn5Mq7We9Rt2Yu4Io6Pa8Sd0Fg2Hj4Kl6",
        "SG.Qw3Er5Ty7Ui9Op1As3Df5G.Hj7Kl9Zx1Cv3Bn5Mq7We9Rt2Yu4Io6Pa8Sd0Fg2Hj4Kl6",
    ),
    (
        "jwt",
        "curl -b 'x=1' https://api.acme.dev/me?jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.Qm9vYmFyYmF6cXV4X2Zvb",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.Qm9vYmFyYmF6cXV4X2Zvb",
    ),
    ("bearer", "curl -H 'Authorization: Bearer Wq2Er4Ty6Ui8Op0Aa' https://api.acme.dev", "Wq2Er4Ty6Ui8Op0Aa"),
    ("auth-basic", "curl -H 'Authorization: Basic Ym9iOmh1bnRlcjJodW50ZXIy' https://x.dev", "Ym9iOmh1bnRlcjJodW50ZXIy"),
    ("auth-token-word", "curl -H 'Authorization: token plainwordsekrit' https://x.dev", "plainwordsekrit"),
    ("url-password", "git clone https://bob:s3cretp4ssw0rd@example.com/r.git", "s3cretp4ssw0rd"),
    ("url-password-at", "psql postgres://bob:p@ssw0rd!Zq@db.internal:5432/app", "p@ssw0rd!Zq"),
    ("url-redis-empty-user", "redis-cli -u redis://:SuperSecretPw123@cache:6379 ping", "SuperSecretPw123"),
    ("flag-p-sshpass", "sshpass -p 'horsebatterystaple' ssh bob@host uptime", "horsebatterystaple"),
    ("flag-password-eq", "./deploy.sh --password=correcthorse42 --env prod", "correcthorse42"),
    ("flag-password-space", "mongo --username admin --password plainsekritword", "plainsekritword"),
    ("flag-api-key", "python tool.py --api-key plainap1keyvalue --verbose", "plainap1keyvalue"),
    ("flag-token", "terraform login --token lowercasetokkenvalue", "lowercasetokkenvalue"),
    ("flag-client-secret", "az login --service-principal --client-secret 'Qz~8Wx.6Ec4Rv2Tb0Yn'", "Qz~8Wx.6Ec4Rv2Tb0Yn"),
    ("env-prefix-password", "PGPASSWORD=letmeinplease psql -h db -U app", "letmeinplease"),
    ("env-prefix-db-pass", "DB_PASS=tangerinedream make migrate", "tangerinedream"),
    ("export-token", "export X_TOKEN=mangosteen1234", "mangosteen1234"),
    ("export-quoted", 'export API_SECRET="four word pass phrase"', "four word pass phrase"),
    ("netrc", "printf 'machine api.acme.dev login bob password quietlyhidden\\n' > ~/.netrc", "quietlyhidden"),
    (
        "pem-rsa",
        f"printf -- '-----BEGIN RSA PRIVATE KEY-----\\n{PEM_BODY}\\n-----END RSA PRIVATE KEY-----' > id_rsa",
        PEM_BODY,
    ),
    (
        "pem-ec",
        "cat > k.pem <<EOF\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBq9Wx3Rk7Lm2Np4Bv6Cx8Zl0\n-----END EC PRIVATE KEY-----\nEOF",
        "MHcCAQEEIBq9Wx3Rk7Lm2Np4Bv6Cx8Zl0",
    ),
    (
        "pem-openssh",
        "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----' > k",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    ("mysql-p", "mysql -u root -pSecretPw1 -h db app", "SecretPw1"),
    ("mysql-p-lower", "mysqldump -u root -phushhushword app", "hushhushword"),
    ("curl-u", "curl -u admin:S3cretPass https://x.y/api", "S3cretPass"),
    ("curl-user", "curl --user admin:lowercasepass https://x.y/api", "lowercasepass"),
    (
        "kube-token",
        "kubectl --server https://k8s:6443 --token=eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlIn0.c2lnbmF0dXJlX29mX2t1YmU get pods",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlIn0.c2lnbmF0dXJlX29mX2t1YmU",
    ),
    (
        "kubeconfig-key-data",
        "grep client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVk ~/.kube/config",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVk",
    ),
    (
        "vault",
        "VAULT_ADDR=https://v:8200 vault login hvs.CAESIJq8Wz3Rk9Lm2Np4Bv6Cx8Zl",
        "hvs.CAESIJq8Wz3Rk9Lm2Np4Bv6Cx8Zl",
    ),
    ("vault-env", "export VAULT_TOKEN=s.Xq7Wz3Rk9Lm2Np4B", "s.Xq7Wz3Rk9Lm2Np4B"),
    (
        "google-api-key",
        "curl 'https://maps.googleapis.com/x?key=AIzaSyQ1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHh'",
        "AIzaSyQ1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHh",
    ),
    (
        "google-oauth",
        "gcloud x --access-token-file=t # ya29.a0AfH6SMBq8Wz3Rk9Lm2Np4Bv6Cx",
        "ya29.a0AfH6SMBq8Wz3Rk9Lm2Np4Bv6Cx",
    ),
    (
        "slack-webhook",
        "curl -X POST https://hooks.slack.com/services/T0A1B2C3/B4D5E6F7/Zq8Wx6Ec4Rv2Tb0Yn1Um3",
        "Zq8Wx6Ec4Rv2Tb0Yn1Um3",
    ),
    ("json-password", 'echo \'{"user": "bob", "password": "hunter2hunter2"}\' > c.json', "hunter2hunter2"),
    ("yaml-secret", "printf 'client_secret: orangejuicebox\\n' >> app.yaml", "orangejuicebox"),
    ("openssl-pass", "openssl rsa -in k.pem -passin pass:violetsunset -out k2.pem", "violetsunset"),
    ("random-key", "export KEY=Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc", "Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc"),
    ("shopify", "curl -H 'X-Shopify-Access-Token: shpat_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8'", "shpat_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8"),
    ("digitalocean", "doctl auth init -t dop_v1_Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9", "dop_v1_Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9"),
    # an audit's finds (2026-12-03): a URL's key parameter, openssl -k, htpasswd -b, az login -p
    (
        "url-key-param",
        "bash tmp_probe.sh 'https://api.x.dev/w?q=paris&key=9f8e7d6c5b4a39281706'",
        "9f8e7d6c5b4a39281706",
    ),
    ("url-apikey-param", "curl 'https://maps.x.dev/geo?apikey=plainlowerkeyvalue&q=1'", "plainlowerkeyvalue"),
    ("openssl-k", "openssl enc -d -aes-256-cbc -k Tr0ub4dor3 -in s.enc -out s.txt", "Tr0ub4dor3"),
    ("htpasswd-b", "htpasswd -b .htpasswd admin hunter2xyz", "hunter2xyz"),
    ("htpasswd-cb", "htpasswd -cb /etc/nginx/.htpasswd admin 'two words'", "two words"),
    ("htpasswd-nb", "htpasswd -nbB admin s3cretpw > auth/htpasswd", "s3cretpw"),
    ("az-login-p", "az login -u bob@acme.dev -p hunterpass", "hunterpass"),
    ("oc-login-p", "oc login https://api.ocp:6443 -u admin -p quietword", "quietword"),
]

# recognisable without a name or flag beside them: also tried as (part of) a file path
PATH_SAFE = {
    "aws-key-id-bare",
    "github-ghp",
    "gitlab-pat-bare",
    "npm-token",
    "huggingface-bare",
    "openai-proj",
    "anthropic",
    "slack-bot",
    "stripe-live",
    "dockerhub-pat",
    "vault",
    "jwt",
    "random-key",
    "shopify",
}

# ordinary commands a page must show as they are
HEALTHY = [
    "git status",
    "git log --oneline -5",
    "git show 3f2a9c0e1b7d4e5f6a7b8c9d0e1f2a3b4c5d6e7f",
    "git diff 3f2a9c0..8b1e4d2 -- src/app.py",
    "git commit -m 'fix: token refresh on expiry' -- src/auth.py",
    "pytest tests/test_a.py -k 'test_token_refresh or password_reset' -x",
    "pytest tests/test_a.py -k case -p no:cacheprovider",
    "python -m pytest -q tests/test_auth_tokens.py::test_expired_token",
    "docker run -p 8080:80 image",
    "docker login --password-stdin registry.acme.dev < /dev/null",
    "mkdir -p build/out",
    "tar -pxzf release.tgz",
    "sha256sum dist/app-1.2.3.tar.gz",
    "cd /home/dev/runs/demo-fixture-shim-20261129-194920/clone",
    "cat src/orchestrator/notify/pages.py",
    "grep -rn 'def redact' src/",
    "npm test -- --runInBand",
    "pip install -e '.[test]'",
    "ruff check . && mypy",
    "ls -la /tmp/claude-0/x/tasks",
    "sed -n 1,40p docs/architecture.md",
    "python tmp_debug_mc.py --case 3",
    "curl -s http://127.0.0.1:8080/health",
    "kubectl get pods -n default",
    "curl 'https://api.x.dev/search?q=paris&page=2'",
    "openssl x509 -in cert.pem -noout -text",
    "htpasswd -v .htpasswd admin",
    "htpasswd -n admin > auth/htpasswd",
]
