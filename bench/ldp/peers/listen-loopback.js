// Preloaded into Community Solid Server (node -r) by bench/ldp/run: CSS 7
// has no option for the address it binds (it listens on every interface),
// so a listen() given only a port gets 127.0.0.1 here.
'use strict';
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
