// KafkaJS over SASL_PLAINTEXT with SASL/PLAIN (or SCRAM), for
// tests/security.rs; with CA_PEM over TLS (SASL_SSL, or SSL when USER is
// "-"), for tests/tls.rs.
//
//   node sasl_plain.js BOOTSTRAP USER PASSWORD TOPIC COUNT [MECHANISM] [CA_PEM]
//
// As USER: sends COUNT records to TOPIC in one request (acks=all) and
// prints "OK <base offset>", or "FAILED: <error name>" and exits 1.
// Bounded by a 60 s timer.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [bootstrap, username, password, topic, count, mechanism = 'plain', ca] = process.argv.slice(2);
  const kafka = new Kafka({
    clientId: 'sasl-plain',
    brokers: [bootstrap],
    sasl: username === '-' ? undefined : { mechanism, username, password },
    ssl: ca ? { ca: [fs.readFileSync(ca, 'utf-8')] } : undefined,
    retry: { retries: 2 },
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < Number(count); i++) {
    messages.push({ value: `${username}-kafkajs-${i}` });
  }
  const [result] = await producer.send({ topic, messages, acks: -1 });
  console.log(`OK ${result.baseOffset}`);
  await producer.disconnect();
}

const timer = setTimeout(() => {
  console.log('FAILED: timeout');
  process.exit(1);
}, 60000);
main()
  .then(() => clearTimeout(timer))
  .catch((e) => {
    console.log(`FAILED: ${e.name}: ${e.message}`);
    process.exit(1);
  });
