// A model provider for `omp --mode rpc` tests: the runtime's mock, registered as provider
// `xcshmock`, model `m` (`--model xcshmock/m`), answering the JSON script in
// $XCSH_TEST_MOCK_SCRIPT in order, then "(the script ended)". Nothing reaches the network.
import { createMockModel } from "@oh-my-pi/pi-ai/providers/mock";

export default function mockProvider(pi: any) {
  const script = JSON.parse(process.env.XCSH_TEST_MOCK_SCRIPT ?? "[]");
  const mock = createMockModel({ provider: "xcshmock", id: "m", responses: script, handler: () => ({ content: ["(the script ended)"] }) });
  pi.registerProvider("xcshmock", {
    api: "xcsh-mock",
    apiKey: "test-key",
    baseUrl: "mock://",
    streamSimple: (model: any, context: any, options: any) => mock.stream(model, context, options),
    models: [
      {
        id: "m",
        name: "m",
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 200000,
        maxTokens: 32768,
      },
    ],
  });
}
