// Wallet sign-in and wallet linking by signature. The server issues a single-use nonce and the
// exact message to sign (shown on the page); a browser wallet found on the page signs it with
// `signMessage` (the `window.solana` convention, or a wallet-standard wallet offering
// `solana:signMessage`); without one, the message can be signed elsewhere and the base58
// signature pasted back.
"use strict";

(function () {
  const C = window.Crucible;
  const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let standardWallet = null;
  let nonce = null;

  function base58(bytes) {
    let zeros = 0;
    while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
    const digits = [];
    for (let k = zeros; k < bytes.length; k++) {
      let carry = bytes[k];
      for (let i = 0; i < digits.length; i++) {
        carry += digits[i] << 8;
        digits[i] = carry % 58;
        carry = (carry / 58) | 0;
      }
      while (carry > 0) { digits.push(carry % 58); carry = (carry / 58) | 0; }
    }
    return "1".repeat(zeros) + digits.reverse().map(function (d) { return ALPHABET[d]; }).join("");
  }

  // Wallet-standard: wallets announce themselves to an app that says it is ready.
  function listenForStandardWallets() {
    const api = { register: function () {
      for (const wallet of arguments) {
        if (wallet && wallet.features && wallet.features["solana:signMessage"]) standardWallet = standardWallet || wallet;
      }
      announce();
      return function () {};
    } };
    window.addEventListener("wallet-standard:register-wallet", function (event) {
      try { event.detail(api); } catch (_) { /* a wallet that fails to register is ignored */ }
    });
    try {
      window.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: api }));
    } catch (_) { /* no CustomEvent: no wallet-standard wallets */ }
  }

  function legacyProvider() {
    const provider = window.solana || (window.phantom && window.phantom.solana);
    return provider && typeof provider.signMessage === "function" ? provider : null;
  }

  function announce() {
    const found = document.getElementById("wallet-found");
    if (!found) return;
    const name = standardWallet ? standardWallet.name : (legacyProvider() ? "a browser wallet" : null);
    found.textContent = name
      ? "Found " + name + ": it will sign the message."
      : "No browser wallet found on this page: sign the message with your wallet elsewhere and paste the signature.";
    const sign = document.getElementById("wallet-sign");
    if (sign) sign.hidden = !name;
  }

  async function connectedAddress() {
    if (standardWallet) {
      const connect = standardWallet.features["standard:connect"];
      const result = connect ? await connect.connect() : { accounts: standardWallet.accounts };
      const account = (result.accounts || standardWallet.accounts || [])[0];
      return account ? account.address : "";
    }
    const provider = legacyProvider();
    if (!provider) return "";
    const result = await provider.connect();
    const key = (result && result.publicKey) || provider.publicKey;
    return key ? key.toString() : "";
  }

  async function signWithWallet(message) {
    const bytes = new TextEncoder().encode(message);
    if (standardWallet) {
      const account = standardWallet.accounts[0];
      const [output] = await standardWallet.features["solana:signMessage"].signMessage({ account, message: bytes });
      return base58(output.signature);
    }
    const provider = legacyProvider();
    const result = await provider.signMessage(bytes, "utf8");
    return base58(result.signature || result);
  }

  function setup(section, mode) {
    const region = document.getElementById("wallet-status");
    const addressInput = document.getElementById("wallet-address");
    document.getElementById("wallet-nonce").addEventListener("click", async function () {
      if (!addressInput.value && (standardWallet || legacyProvider())) {
        try { addressInput.value = await connectedAddress(); } catch (error) { C.say(region, "The wallet refused to connect: " + error.message, "error"); return; }
      }
      const result = await C.api("POST", "/web-api/auth/nonce", { wallet: addressInput.value.trim() });
      if (result.status !== 200) { C.say(region, C.human(result).text, "error"); return; }
      nonce = result.body.nonce;
      document.getElementById("wallet-message").textContent = result.body.message;
      document.getElementById("wallet-message-box").hidden = false;
      C.say(region, "Valid until " + C.when(result.body.expiresAt) + ".");
    });
    document.getElementById("wallet-sign").addEventListener("click", async function () {
      try {
        document.getElementById("wallet-signature").value = await signWithWallet(document.getElementById("wallet-message").textContent);
        C.say(region, "Signed: now send it.", "ok");
      } catch (error) {
        C.say(region, "The wallet did not sign: " + (error && error.message ? error.message : error), "error");
      }
    });
    document.getElementById("wallet-submit").addEventListener("click", async function () {
      const body = { wallet: addressInput.value.trim(), nonce: nonce, signature: document.getElementById("wallet-signature").value.trim() };
      let path = "/web-api/account/wallets";
      if (mode === "sign-in") {
        path = "/web-api/auth/wallet";
        const terms = document.getElementById("accept-terms");
        const privacy = document.getElementById("accept-privacy");
        body.acceptTerms = !!(terms && terms.checked);
        body.acceptPrivacy = !!(privacy && privacy.checked);
      }
      const result = await C.api("POST", path, body);
      if (result.status >= 200 && result.status < 300) {
        C.say(region, mode === "sign-in" ? "Signed in." : "Wallet linked.", "ok");
        if (mode === "sign-in") location.assign(section.dataset.next || "/account"); else location.reload();
        return;
      }
      const problem = C.human(result);
      C.say(region, problem.text, "error");
      // A first wallet sign-in creates the account: the acceptance boxes must be ticked.
      const acceptance = document.getElementById("wallet-acceptance");
      if (acceptance && /accept/i.test(problem.text)) acceptance.hidden = false;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const signIn = document.getElementById("wallet-sign-in");
    const link = document.getElementById("wallet-link");
    if (!signIn && !link) return;
    listenForStandardWallets();
    announce();
    setup(signIn || link, signIn ? "sign-in" : "link");
  });
})();
