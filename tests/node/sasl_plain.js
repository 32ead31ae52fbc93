// KafkaJS over SASL_PLAINTEXT with SASL/PLAIN, for tests/security.rs.
//
//   node sasl_plain.js BOOTSTRAP USER PASSWORD TOPIC COUNT [MECHANISM]
//
// As USER: sends COUNT records to TOPIC in one request (acks=all) and
// prints "OK <base offset>", or "FAILED: <error name>" and exits 1.
// Bounded by a 60 s timer.
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [bootstrap, username, password, topic, count, mechanism = 'plain'] = process.argv.slice(2);
  const kafka = new Kafka({
    clientId: 'sasl-plain',
    brokers: [bootstrap],
    sasl: { mechanism, username, password },
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
