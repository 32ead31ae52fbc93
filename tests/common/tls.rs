//! Certificates for the TLS tests, made as a Kafka operator makes them:
//! a CA with `openssl`, the broker's and clients' keys signed by it, an
//! encrypted PKCS#8 key, PKCS12 keystores from `openssl pkcs12 -export`
//! and a PKCS12 truststore from Java's `keytool`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files of one test's certificate authority.
pub struct TestCa {
    pub dir: PathBuf,
}

fn run(program: &str, args: &[&str], dir: &Path) {
    let out = Command::new(super::require_tool(program))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TestCa {
    /// A CA (`ca.pem`, `ca.key`) in `dir`.
    pub fn new(dir: &Path) -> TestCa {
        std::fs::create_dir_all(dir).expect("ca dir");
        run(
            "openssl",
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-subj",
                "/CN=ferrolog-test-ca",
            ],
            dir,
        );
        TestCa {
            dir: dir.to_path_buf(),
        }
    }

    /// `ca.pem`.
    pub fn ca_pem(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// `<name>.key` and `<name>.pem` signed by the CA, for `subject`
    /// (`/O=ferrolog/OU=eng/CN=alice`), valid for 127.0.0.1 and localhost;
    /// and `<name>-keystore.pem` (key, certificate, CA: one PEM keystore).
    pub fn issue(&self, name: &str, subject: &str) -> PathBuf {
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        let pem = format!("{name}.pem");
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.join(&ext),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .expect("ext");
        run(
            "openssl",
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj",
                subject,
            ],
            &self.dir,
        );
        run(
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &pem,
            ],
            &self.dir,
        );
        let keystore = self.dir.join(format!("{name}-keystore.pem"));
        let text = [&key, &pem, "ca.pem"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).expect("pem"))
            .collect::<Vec<_>>()
            .join("");
        std::fs::write(&keystore, text).expect("keystore");
        keystore
    }

    /// `<name>`'s key encrypted (PKCS#8, PBES2 AES-256) under `password`,
    /// with its certificate: `<name>-encrypted.pem`.
    pub fn encrypted_keystore(&self, name: &str, password: &str) -> PathBuf {
        let encrypted = format!("{name}-encrypted.key");
        let pass = format!("pass:{password}");
        run(
            "openssl",
            &[
                "pkcs8",
                "-topk8",
                "-v2",
                "aes-256-cbc",
                "-in",
                &format!("{name}.key"),
                "-passout",
                &pass,
                "-out",
                &encrypted,
            ],
            &self.dir,
        );
        let path = self.dir.join(format!("{name}-encrypted.pem"));
        let text = [encrypted, format!("{name}.pem")]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).expect("pem"))
            .collect::<Vec<_>>()
            .join("");
        std::fs::write(&path, text).expect("encrypted keystore");
        path
    }

    /// `<name>.p12`: its key, certificate and the CA, under `password`.
    pub fn pkcs12_keystore(&self, name: &str, password: &str) -> PathBuf {
        let out = format!("{name}.p12");
        run(
            "openssl",
            &[
                "pkcs12",
                "-export",
                "-in",
                &format!("{name}.pem"),
                "-inkey",
                &format!("{name}.key"),
                "-certfile",
                "ca.pem",
                "-name",
                name,
                "-passout",
                &format!("pass:{password}"),
                "-out",
                &out,
            ],
            &self.dir,
        );
        self.dir.join(out)
    }

    /// `truststore.p12`: the CA as keytool imports it, under `password`.
    pub fn pkcs12_truststore(&self, password: &str) -> PathBuf {
        let _ = std::fs::remove_file(self.dir.join("truststore.p12"));
        run(
            "keytool",
            &[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "ca.pem",
                "-keystore",
                "truststore.p12",
                "-storetype",
                "PKCS12",
                "-storepass",
                password,
            ],
            &self.dir,
        );
        self.dir.join("truststore.p12")
    }
}

/// A TLS connection to a broker that trusts `ca`, optionally presenting
/// `client_keystore` (a PEM key and chain): a [`RawConnection`]-like
/// client over rustls for the tests that look at the handshake.
pub fn tls_client_config(
    ca: &Path,
    client_keystore: Option<&Path>,
) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(ca).expect("ca pem") {
        roots.add(certificate.expect("ca")).expect("root");
    }
    #[allow(deprecated)]
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
    let config = match client_keystore {
        None => builder.with_no_client_auth(),
        Some(keystore) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(keystore)
                .expect("chain")
                .map(|c| c.expect("certificate"))
                .collect();
            let key = PrivateKeyDer::from_pem_file(keystore).expect("key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client auth")
        }
    };
    std::sync::Arc::new(config)
}

/// A blocking TLS stream to `address` (`127.0.0.1:port`), handshake done;
/// the error as text when the broker refuses it.
pub fn tls_connect(
    address: &str,
    config: std::sync::Arc<rustls::ClientConfig>,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>, String> {
    let host = address
        .rsplit_once(':')
        .map_or(address, |(h, _)| h)
        .to_string();
    let name = rustls_pki_types::ServerName::try_from(host).map_err(|e| e.to_string())?;
    let mut connection = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut socket = std::net::TcpStream::connect(address).map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    while connection.is_handshaking() {
        connection
            .complete_io(&mut socket)
            .map_err(|e| format!("handshake: {e}"))?;
    }
    Ok(rustls::StreamOwned::new(connection, socket))
}

/// The subject CN of the certificate a TLS stream's server presented.
pub fn server_certificate_der(
    stream: &rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>,
) -> Vec<u8> {
    stream
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|c| c.to_vec())
        .expect("the server presented a certificate")
}
